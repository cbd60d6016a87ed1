import Foundation
import LocalLMDB

/// The benchmark's object: a Student-like record of about 300 bytes of JSON, with strings,
/// integers, a double, an array of strings and a nested object.
public final class BenchStudent: Storable {
    public var firstName: String
    public var lastName: String
    public var email: String
    public var age: Int
    public var enrolmentYear: Int
    public var gpa: Double
    public var subjects: [String]
    public var address: BenchAddress

    public init(index: Int) {
        let values = StudentValues(index: index)
        (firstName, lastName, email) = (values.firstName, values.lastName, values.email)
        (age, enrolmentYear, gpa, subjects) = (values.age, values.enrolmentYear, values.gpa, values.subjects)
        address = BenchAddress(street: values.street, city: values.city, postcode: values.postcode)
    }

    public required init(dataObject: DataObject) {
        firstName = dataObject.get("firstName")
        lastName = dataObject.get("lastName")
        email = dataObject.get("email")
        age = dataObject.get("age")
        enrolmentYear = dataObject.get("enrolmentYear")
        gpa = dataObject.get("gpa")
        subjects = dataObject.get("subjects")
        address = dataObject.getObject("address", type: BenchAddress.self)
    }

    public func toDataObject() -> DataObject {
        DataObject(self)
            .add(key: "firstName", value: firstName)
            .add(key: "lastName", value: lastName)
            .add(key: "email", value: email)
            .add(key: "age", value: age)
            .add(key: "enrolmentYear", value: enrolmentYear)
            .add(key: "gpa", value: gpa)
            .add(key: "subjects", value: subjects)
            .add(key: "address", value: address)
    }
}

/// The nested object.
public final class BenchAddress: Storable {
    public var street: String
    public var city: String
    public var postcode: String

    public init(street: String, city: String, postcode: String) {
        self.street = street
        self.city = city
        self.postcode = postcode
    }

    public required init(dataObject: DataObject) {
        street = dataObject.get("street")
        city = dataObject.get("city")
        postcode = dataObject.get("postcode")
    }

    public func toDataObject() -> DataObject {
        DataObject(self)
            .add(key: "street", value: street)
            .add(key: "city", value: city)
            .add(key: "postcode", value: postcode)
    }
}

/// The same Student as `BenchStudent`, as an application would write it with Codable: a struct
/// that declares `Codable, Persistable` and lets the compiler synthesize its coding. The same
/// fields, filled with the same values for the same index (checked by
/// `Fixture.codableMatchesHandWritten`). The nested address is a plain `Codable` struct, as
/// Codable code usually has it: it is stored as a JSON object without a class name, where the
/// hand-written model's nested `Storable` carries one (`"object":"BenchAddress"`).
public struct BenchCodableStudent: Codable, Persistable, Sendable, Equatable {
    public var firstName: String
    public var lastName: String
    public var email: String
    public var age: Int
    public var enrolmentYear: Int
    public var gpa: Double
    public var subjects: [String]
    public var address: BenchCodableAddress

    public init(index: Int) {
        let values = StudentValues(index: index)
        (firstName, lastName, email) = (values.firstName, values.lastName, values.email)
        (age, enrolmentYear, gpa, subjects) = (values.age, values.enrolmentYear, values.gpa, values.subjects)
        address = BenchCodableAddress(street: values.street, city: values.city, postcode: values.postcode)
    }
}

/// The Codable student's nested value.
public struct BenchCodableAddress: Codable, Sendable, Equatable {
    public var street: String
    public var city: String
    public var postcode: String

    public init(street: String, city: String, postcode: String) {
        self.street = street
        self.city = city
        self.postcode = postcode
    }
}

/// The values of the student of `index`, from which every store's form of the student is built.
struct StudentValues {
    let firstName: String, lastName: String, email: String
    let age: Int, enrolmentYear: Int, gpa: Double, subjects: [String]
    let street: String, city: String, postcode: String

    init(index: Int) {
        firstName = "Firstname\(index)"
        lastName = "Lastname\(index % 997)"
        email = "student.\(index)@university.example.edu"
        age = 18 + index % 10
        enrolmentYear = 2020 + index % 6
        gpa = 2.0 + Double(index % 200) / 100.0
        subjects = ["Mathematics", "Physics", "Chemistry", "Computer Science"]
        (street, city, postcode) = ("\(index % 500) Long Street", "Melbourne", "3000")
    }
}

/// Ids and helpers shared by every contender.
public enum Fixture {
    /// `count` UUID ids, the same for every contender in a run.
    public static func ids(_ count: Int) -> [String] {
        (0..<count).map { _ in UUID().uuidString }
    }

    /// True when the Codable model of `index` holds exactly the hand-written one's values.
    public static func codableMatchesHandWritten(index: Int, model: BenchModel = .student) -> Bool {
        if model == .wide { return BenchCodableOrder(index: index) == BenchCodableOrder(BenchOrder(index: index)) }
        let handWritten = BenchStudent(index: index)
        let codable = BenchCodableStudent(index: index)
        return codable.firstName == handWritten.firstName && codable.lastName == handWritten.lastName
            && codable.email == handWritten.email && codable.age == handWritten.age
            && codable.enrolmentYear == handWritten.enrolmentYear && codable.gpa == handWritten.gpa
            && codable.subjects == handWritten.subjects
            && codable.address == BenchCodableAddress(
                street: handWritten.address.street, city: handWritten.address.city, postcode: handWritten.address.postcode)
    }

    /// A fresh temporary directory.
    public static func temporaryDirectory(_ name: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("lmdb-bench-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
