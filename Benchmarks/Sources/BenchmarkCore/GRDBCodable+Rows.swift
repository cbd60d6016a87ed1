import Foundation
import GRDB

/// A GRDB record of a benchmark object: built from the hand-written object of an index, with
/// the table it is stored in.
protocol BenchRow: Codable, FetchableRecord, PersistableRecord, Sendable {
    init(id: String, index: Int)
    static func createTable(_ db: Database) throws
}

extension GRDBCodable {
    struct Address: Codable {
        var street: String
        var city: String
        var postcode: String
    }

    struct StudentRow: BenchRow {
        static let databaseTableName = "student"
        var id: String
        var firstName: String
        var lastName: String
        var email: String
        var age: Int
        var enrolmentYear: Int
        var gpa: Double
        var subjects: [String]
        var address: Address

        init(id: String, index: Int) {
            let source = BenchStudent(index: index)
            self.id = id
            firstName = source.firstName
            lastName = source.lastName
            email = source.email
            age = source.age
            enrolmentYear = source.enrolmentYear
            gpa = source.gpa
            subjects = source.subjects
            address = Address(street: source.address.street, city: source.address.city, postcode: source.address.postcode)
        }

        static func createTable(_ db: Database) throws {
            try db.create(table: databaseTableName, ifNotExists: true) { table in
                table.primaryKey("id", .text)
                table.column("firstName", .text).notNull()
                table.column("lastName", .text).notNull()
                table.column("email", .text).notNull()
                table.column("age", .integer).notNull()
                table.column("enrolmentYear", .integer).notNull()
                table.column("gpa", .double).notNull()
                table.column("subjects", .jsonText).notNull()
                table.column("address", .jsonText).notNull()
            }
        }
    }

    struct ShippingAddress: Codable {
        var recipient: String
        var line1: String
        var city: String
        var postcode: String
        var instructions: String
    }

    /// The order, with a column per scalar field; the tags, the SKUs and the shipping address
    /// are JSON columns, as GRDB stores arrays and nested Codable values.
    struct OrderRow: BenchRow {
        static let databaseTableName = "orders"
        var id: String
        var orderNumber: String
        var title: String
        var productDescription: String
        var customerName: String
        var customerEmail: String
        var status: String
        var customerId: Int
        var quantity: Int
        var unitPriceCents: Int
        var warehouseId: Int
        var weightKg: Double
        var discountRate: Double
        var isGift: Bool
        var tags: [String]
        var lineItemSkus: [Int]
        var shippingAddress: ShippingAddress

        init(id: String, index: Int) {
            let source = BenchOrder(index: index)
            self.id = id
            orderNumber = source.orderNumber
            title = source.title
            productDescription = source.productDescription
            customerName = source.customerName
            customerEmail = source.customerEmail
            status = source.status
            customerId = source.customerId
            quantity = source.quantity
            unitPriceCents = source.unitPriceCents
            warehouseId = source.warehouseId
            weightKg = source.weightKg
            discountRate = source.discountRate
            isGift = source.isGift
            tags = source.tags
            lineItemSkus = source.lineItemSkus
            let address = source.shippingAddress
            shippingAddress = ShippingAddress(
                recipient: address.recipient, line1: address.line1, city: address.city, postcode: address.postcode,
                instructions: address.instructions)
        }

        static func createTable(_ db: Database) throws {
            try db.create(table: databaseTableName, ifNotExists: true) { table in
                table.primaryKey("id", .text)
                table.column("orderNumber", .text).notNull()
                table.column("title", .text).notNull()
                table.column("productDescription", .text).notNull()
                table.column("customerName", .text).notNull()
                table.column("customerEmail", .text).notNull()
                table.column("status", .text).notNull()
                table.column("customerId", .integer).notNull()
                table.column("quantity", .integer).notNull()
                table.column("unitPriceCents", .integer).notNull()
                table.column("warehouseId", .integer).notNull()
                table.column("weightKg", .double).notNull()
                table.column("discountRate", .double).notNull()
                table.column("isGift", .boolean).notNull()
                table.column("tags", .jsonText).notNull()
                table.column("lineItemSkus", .jsonText).notNull()
                table.column("shippingAddress", .jsonText).notNull()
            }
        }
    }
}
