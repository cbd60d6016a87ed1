import Foundation
import LocalLMDB

/// The same order as `BenchOrder`, as an application would write it with Codable: a struct that
/// declares `Codable, Persistable` and lets the compiler synthesize its coding, with the same
/// values for the same index (checked by `Fixture.codableMatchesHandWritten`). The nested
/// address is a plain `Codable` struct, stored without a class name.
public struct BenchCodableOrder: Codable, Persistable, Sendable, Equatable {
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
    public var shippingAddress: BenchCodableShippingAddress

    public init(index: Int) {
        let values = OrderValues(index: index)
        orderNumber = values.orderNumber
        title = values.title
        productDescription = values.productDescription
        customerName = values.customerName
        customerEmail = values.customerEmail
        status = values.status
        customerId = values.customerId
        quantity = values.quantity
        unitPriceCents = values.unitPriceCents
        warehouseId = values.warehouseId
        weightKg = values.weightKg
        discountRate = values.discountRate
        isGift = values.isGift
        tags = values.tags
        lineItemSkus = values.lineItemSkus
        shippingAddress = BenchCodableShippingAddress(
            recipient: values.recipient, line1: values.line1, city: values.city, postcode: values.postcode,
            instructions: values.instructions)
    }

    /// The hand-written order's values, for comparison.
    init(_ order: BenchOrder) {
        orderNumber = order.orderNumber
        title = order.title
        productDescription = order.productDescription
        customerName = order.customerName
        customerEmail = order.customerEmail
        status = order.status
        customerId = order.customerId
        quantity = order.quantity
        unitPriceCents = order.unitPriceCents
        warehouseId = order.warehouseId
        weightKg = order.weightKg
        discountRate = order.discountRate
        isGift = order.isGift
        tags = order.tags
        lineItemSkus = order.lineItemSkus
        let address = order.shippingAddress
        shippingAddress = BenchCodableShippingAddress(
            recipient: address.recipient, line1: address.line1, city: address.city, postcode: address.postcode,
            instructions: address.instructions)
    }
}

/// The Codable order's nested value.
public struct BenchCodableShippingAddress: Codable, Sendable, Equatable {
    public var recipient: String
    public var line1: String
    public var city: String
    public var postcode: String
    public var instructions: String

    public init(recipient: String, line1: String, city: String, postcode: String, instructions: String) {
        self.recipient = recipient
        self.line1 = line1
        self.city = city
        self.postcode = postcode
        self.instructions = instructions
    }
}
