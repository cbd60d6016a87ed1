import Foundation
import LocalLMDB

// The seed's model classes, written as SwiftLocal users write them. They live in a library of
// their own so that the tests and the child processes they launch share mangled type names.

open class Person: Storable {
    public private(set) var firstName: String
    public private(set) var lastName: String

    public init(firstName: String, lastName: String) {
        self.firstName = firstName
        self.lastName = lastName
    }

    private enum Field: String {
        case firstName
        case lastName
    }

    public required init(dataObject: DataObject) {
        self.firstName = dataObject.get(Field.firstName.rawValue)
        self.lastName = dataObject.get(Field.lastName.rawValue)
    }

    open func toDataObject() -> DataObject {
        return DataObject(self)
            .add(key: Field.firstName.rawValue, value: self.firstName)
            .add(key: Field.lastName.rawValue, value: self.lastName)
    }
}

public final class Student: Person {
    public private(set) var homework = [Homework]()
    public private(set) var debt: Double
    public private(set) var teacher: Teacher
    public private(set) var subjectNames: [String]

    public init(firstName: String, lastName: String, debt: Double, teacher: Teacher, subjectNames: [String]) {
        self.debt = debt
        self.teacher = teacher
        self.subjectNames = subjectNames
        super.init(firstName: firstName, lastName: lastName)
    }

    public func giveHomework(_ homework: Homework) {
        self.homework.append(homework)
    }

    private enum Field: String {
        case debt
        case homework
        case teacher
        case subjectNames
    }

    public required init(dataObject: DataObject) {
        self.debt = dataObject.get(Field.debt.rawValue)
        self.homework = dataObject.getObjectArray(Field.homework.rawValue, type: Homework.self)
        self.teacher = dataObject.getObject(Field.teacher.rawValue, type: Teacher.self)
        self.subjectNames = dataObject.get(Field.subjectNames.rawValue)
        super.init(dataObject: dataObject)
    }

    public override func toDataObject() -> DataObject {
        return super.toDataObject()
            .add(key: Field.debt.rawValue, value: self.debt)
            .add(key: Field.homework.rawValue, value: self.homework)
            .add(key: Field.teacher.rawValue, value: self.teacher)
            .add(key: Field.subjectNames.rawValue, value: self.subjectNames)
    }
}

public final class Teacher: Person {
    public private(set) var salary: Double

    public init(firstName: String, lastName: String, salary: Double) {
        self.salary = salary
        super.init(firstName: firstName, lastName: lastName)
    }

    private enum Field: String {
        case salary
    }

    public required init(dataObject: DataObject) {
        self.salary = dataObject.get(Field.salary.rawValue)
        super.init(dataObject: dataObject)
    }

    public override func toDataObject() -> DataObject {
        return super.toDataObject()
            .add(key: Field.salary.rawValue, value: self.salary)
    }
}

public final class Homework: Storable {
    public let answers: String
    public private(set) var grade: Int?

    public init(answers: String, grade: Int?) {
        self.answers = answers
        self.grade = grade
    }

    private enum Field: String {
        case answers
        case grade
    }

    public required init(dataObject: DataObject) {
        self.answers = dataObject.get(Field.answers.rawValue)
        self.grade = dataObject.get(Field.grade.rawValue)
    }

    public func toDataObject() -> DataObject {
        return DataObject(self)
            .add(key: Field.answers.rawValue, value: self.answers)
            .add(key: Field.grade.rawValue, value: self.grade)
    }
}

/// A record used by the crash and multi-process tests: a sequence number and a payload.
public final class Entry: Storable {
    public let sequence: Int
    public let payload: String

    public init(sequence: Int, payload: String) {
        self.sequence = sequence
        self.payload = payload
    }

    public required init(dataObject: DataObject) {
        sequence = dataObject.get("sequence")
        payload = dataObject.get("payload")
    }

    public func toDataObject() -> DataObject {
        DataObject(self).add(key: "sequence", value: sequence).add(key: "payload", value: payload)
    }
}

/// A second record type for tests that mix types.
public final class Note: Storable {
    public let text: String

    public init(text: String) {
        self.text = text
    }

    public required init(dataObject: DataObject) {
        text = dataObject.get("text")
    }

    public func toDataObject() -> DataObject {
        DataObject(self).add(key: "text", value: text)
    }
}

/// Builds a Student with a nested teacher and homework, as the tests and helper both need.
public func makeStudent(_ name: String, debt: Double = 1234.5) -> Student {
    let teacher = Teacher(firstName: "Ada", lastName: "Lovelace", salary: 98_000.25)
    let student = Student(firstName: name, lastName: "Pham", debt: debt, teacher: teacher, subjectNames: ["Maths", "Physics"])
    student.giveHomework(Homework(answers: "42", grade: 7))
    student.giveHomework(Homework(answers: "unknown", grade: nil))
    return student
}
