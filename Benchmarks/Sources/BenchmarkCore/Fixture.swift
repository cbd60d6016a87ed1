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
        firstName = "Firstname\(index)"
        lastName = "Lastname\(index % 997)"
        email = "student.\(index)@university.example.edu"
        age = 18 + index % 10
        enrolmentYear = 2020 + index % 6
        gpa = 2.0 + Double(index % 200) / 100.0
        subjects = ["Mathematics", "Physics", "Chemistry", "Computer Science"]
        address = BenchAddress(street: "\(index % 500) Long Street", city: "Melbourne", postcode: "3000")
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

/// Ids and helpers shared by every contender.
public enum Fixture {
    /// `count` UUID ids, the same for every contender in a run.
    public static func ids(_ count: Int) -> [String] {
        (0..<count).map { _ in UUID().uuidString }
    }

    /// A fresh temporary directory.
    public static func temporaryDirectory(_ name: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("lmdb-bench-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
