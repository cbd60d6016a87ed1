import Foundation
import LocalLMDBModels

/// The student as a macro'd model (`@StoredModel`): the Codable student's fields, stored in the
/// same bytes (`Fixture.typedMatchesCodable`), coded by generated code.
@StoredModel
public struct TypedBenchStudent: Sendable, BenchObject {
    public var firstName: String
    public var lastName: String
    public var email: String
    public var age: Int
    public var enrolmentYear: Int
    public var gpa: Double
    public var subjects: [String]
    public var address: TypedBenchAddress

    public init(index: Int) {
        let values = StudentValues(index: index)
        (firstName, lastName, email) = (values.firstName, values.lastName, values.email)
        (age, enrolmentYear, gpa, subjects) = (values.age, values.enrolmentYear, values.gpa, values.subjects)
        address = TypedBenchAddress(street: values.street, city: values.city, postcode: values.postcode)
    }

    public var probe: Int { age }
}

/// The typed student's nested value.
@StoredValue
public struct TypedBenchAddress: Sendable {
    public var street: String
    public var city: String
    public var postcode: String
}

/// The wide order as a macro'd model, as `TypedBenchStudent` is the student.
@StoredModel
public struct TypedBenchOrder: Sendable, BenchObject {
    public var orderNumber: String
    public var title: String
    public var productDescription: String
    public var customerName: String
    public var customerEmail: String
    public var status: String
    public var customerId: Int
    public var quantity: Int
    public var unitPriceCents: Int
    public var warehouseId: Int
    public var weightKg: Double
    public var discountRate: Double
    public var isGift: Bool
    public var tags: [String]
    public var lineItemSkus: [Int]
    public var shippingAddress: TypedBenchShippingAddress

    public init(index: Int) {
        let values = OrderValues(index: index)
        (orderNumber, title, productDescription) = (values.orderNumber, values.title, values.productDescription)
        (customerName, customerEmail, status) = (values.customerName, values.customerEmail, values.status)
        (customerId, quantity, unitPriceCents, warehouseId) = (values.customerId, values.quantity, values.unitPriceCents, values.warehouseId)
        (weightKg, discountRate, isGift, tags, lineItemSkus) = (values.weightKg, values.discountRate, values.isGift, values.tags, values.lineItemSkus)
        shippingAddress = TypedBenchShippingAddress(
            recipient: values.recipient, line1: values.line1, city: values.city, postcode: values.postcode, instructions: values.instructions)
    }

    public var probe: Int { quantity }
}

/// The typed order's nested value.
@StoredValue
public struct TypedBenchShippingAddress: Sendable {
    public var recipient: String
    public var line1: String
    public var city: String
    public var postcode: String
    public var instructions: String
}

/// `TypedBenchStudent` and `TypedBenchOrder`, the macro'd models.
public enum TypedModels: LocalLMDBModels {
    public typealias Student = TypedBenchStudent
    public typealias Order = TypedBenchOrder
    public static let name = "LocalLMDB (@StoredModel)"
}

/// LocalLMDB with macro'd models.
public typealias LocalLMDBTypedContender = LocalLMDBContender<TypedModels>

extension Fixture {
    /// The stored JSON of the typed or Codable object of `index`, for a failure message.
    public static func storedJSON(typed: Bool, index: Int, model: BenchModel) -> String {
        let object: DataObject? = switch (model, typed) {
        case (.student, true): try? TypedBenchStudent(index: index)._storedFields()
        case (.student, false): try? BenchCodableStudent(index: index)._storedFields()
        case (.wide, true): try? TypedBenchOrder(index: index)._storedFields()
        case (.wide, false): try? BenchCodableOrder(index: index)._storedFields()
        }
        return object?.toRawString() ?? "(none)"
    }

    /// Whether the typed object of `index` stores the bytes the Codable one stores (but for its
    /// class name).
    public static func typedMatchesCodable(index: Int, model: BenchModel = .student) -> Bool {
        let typed = storedJSON(typed: true, index: index, model: model)
            .replacingOccurrences(of: "\"object\":\"TypedBenchStudent\"", with: "\"object\":\"BenchCodableStudent\"")
            .replacingOccurrences(of: "\"object\":\"TypedBenchOrder\"", with: "\"object\":\"BenchCodableOrder\"")
        return typed == storedJSON(typed: false, index: index, model: model) && typed != "(none)"
    }
}
