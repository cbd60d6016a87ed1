import Foundation

/// SwiftLocal's DataObject, reduced to what the benchmark needs: a `[String: Any]` (SwiftyJSON's
/// storage) serialized with `JSONSerialization`, with nested objects as nested dictionaries.
enum DictionaryDataObject {
    struct Student {
        var firstName: String, lastName: String, email: String
        var age: Int, enrolmentYear: Int, gpa: Double
        var subjects: [String]
        var street: String, city: String, postcode: String
    }

    /// The JSON text of `model`'s object of `index`.
    static func encode(_ model: BenchModel, index: Int) throws -> String {
        switch model {
        case .student: try encode(student: index)
        case .wide: try encode(order: index)
        }
    }

    static func encode(student index: Int) throws -> String {
        let source = BenchStudent(index: index)
        var address: [String: Any] = ["object": "BenchAddress"]
        address["street"] = source.address.street
        address["city"] = source.address.city
        address["postcode"] = source.address.postcode
        var json: [String: Any] = ["object": "BenchStudent"]
        json["firstName"] = source.firstName
        json["lastName"] = source.lastName
        json["email"] = source.email
        json["age"] = source.age
        json["enrolmentYear"] = source.enrolmentYear
        json["gpa"] = source.gpa
        json["subjects"] = source.subjects
        json["address"] = address
        let data = try JSONSerialization.data(withJSONObject: json)
        return String(decoding: data, as: UTF8.self)
    }

    static func decodeStudent(_ text: String) throws -> Student {
        let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] ?? [:]
        let address = object["address"] as? [String: Any] ?? [:]
        return Student(
            firstName: object["firstName"] as? String ?? "",
            lastName: object["lastName"] as? String ?? "",
            email: object["email"] as? String ?? "",
            age: object["age"] as? Int ?? 0,
            enrolmentYear: object["enrolmentYear"] as? Int ?? 0,
            gpa: object["gpa"] as? Double ?? 0,
            subjects: object["subjects"] as? [String] ?? [],
            street: address["street"] as? String ?? "",
            city: address["city"] as? String ?? "",
            postcode: address["postcode"] as? String ?? "")
    }

    struct Order {
        var orderNumber: String, title: String, productDescription: String
        var customerName: String, customerEmail: String, status: String
        var customerId: Int, quantity: Int, unitPriceCents: Int, warehouseId: Int
        var weightKg: Double, discountRate: Double, isGift: Bool
        var tags: [String], lineItemSkus: [Int]
        var recipient: String, line1: String, city: String, postcode: String, instructions: String
    }

    static func encode(order index: Int) throws -> String {
        let source = BenchOrder(index: index)
        var address: [String: Any] = ["object": "BenchShippingAddress"]
        address["recipient"] = source.shippingAddress.recipient
        address["line1"] = source.shippingAddress.line1
        address["city"] = source.shippingAddress.city
        address["postcode"] = source.shippingAddress.postcode
        address["instructions"] = source.shippingAddress.instructions
        var json: [String: Any] = ["object": "BenchOrder"]
        json["orderNumber"] = source.orderNumber
        json["title"] = source.title
        json["productDescription"] = source.productDescription
        json["customerName"] = source.customerName
        json["customerEmail"] = source.customerEmail
        json["status"] = source.status
        json["customerId"] = source.customerId
        json["quantity"] = source.quantity
        json["unitPriceCents"] = source.unitPriceCents
        json["warehouseId"] = source.warehouseId
        json["weightKg"] = source.weightKg
        json["discountRate"] = source.discountRate
        json["isGift"] = source.isGift
        json["tags"] = source.tags
        json["lineItemSkus"] = source.lineItemSkus
        json["shippingAddress"] = address
        let data = try JSONSerialization.data(withJSONObject: json)
        return String(decoding: data, as: UTF8.self)
    }

    static func decodeOrder(_ text: String) throws -> Order {
        let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] ?? [:]
        let address = object["shippingAddress"] as? [String: Any] ?? [:]
        return Order(
            orderNumber: object["orderNumber"] as? String ?? "",
            title: object["title"] as? String ?? "",
            productDescription: object["productDescription"] as? String ?? "",
            customerName: object["customerName"] as? String ?? "",
            customerEmail: object["customerEmail"] as? String ?? "",
            status: object["status"] as? String ?? "",
            customerId: object["customerId"] as? Int ?? 0,
            quantity: object["quantity"] as? Int ?? 0,
            unitPriceCents: object["unitPriceCents"] as? Int ?? 0,
            warehouseId: object["warehouseId"] as? Int ?? 0,
            weightKg: object["weightKg"] as? Double ?? 0,
            discountRate: object["discountRate"] as? Double ?? 0,
            isGift: object["isGift"] as? Bool ?? false,
            tags: object["tags"] as? [String] ?? [],
            lineItemSkus: object["lineItemSkus"] as? [Int] ?? [],
            recipient: address["recipient"] as? String ?? "",
            line1: address["line1"] as? String ?? "",
            city: address["city"] as? String ?? "",
            postcode: address["postcode"] as? String ?? "",
            instructions: address["instructions"] as? String ?? "")
    }
}
