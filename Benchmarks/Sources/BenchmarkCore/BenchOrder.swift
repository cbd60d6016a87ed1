import Foundation
import LocalLMDB

/// The wide model: an Order-like record of about 800 bytes of JSON, with 16 fields: six strings
/// longer than 15 bytes (a ~100-byte description among them), four integers, two doubles, a
/// Bool, an array of strings, an array of integers and a nested shipping address of five
/// strings. No dates, whose formats differ between the stores.
public final class BenchOrder: Storable {
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
    public var shippingAddress: BenchShippingAddress

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
        shippingAddress = BenchShippingAddress(
            recipient: values.recipient, line1: values.line1, city: values.city, postcode: values.postcode,
            instructions: values.instructions)
    }

    public required init(dataObject: DataObject) {
        orderNumber = dataObject.get("orderNumber")
        title = dataObject.get("title")
        productDescription = dataObject.get("productDescription")
        customerName = dataObject.get("customerName")
        customerEmail = dataObject.get("customerEmail")
        status = dataObject.get("status")
        customerId = dataObject.get("customerId")
        quantity = dataObject.get("quantity")
        unitPriceCents = dataObject.get("unitPriceCents")
        warehouseId = dataObject.get("warehouseId")
        weightKg = dataObject.get("weightKg")
        discountRate = dataObject.get("discountRate")
        isGift = dataObject.get("isGift")
        tags = dataObject.get("tags")
        lineItemSkus = dataObject.get("lineItemSkus")
        shippingAddress = dataObject.getObject("shippingAddress", type: BenchShippingAddress.self)
    }

    public func toDataObject() -> DataObject {
        DataObject(self)
            .add(key: "orderNumber", value: orderNumber)
            .add(key: "title", value: title)
            .add(key: "productDescription", value: productDescription)
            .add(key: "customerName", value: customerName)
            .add(key: "customerEmail", value: customerEmail)
            .add(key: "status", value: status)
            .add(key: "customerId", value: customerId)
            .add(key: "quantity", value: quantity)
            .add(key: "unitPriceCents", value: unitPriceCents)
            .add(key: "warehouseId", value: warehouseId)
            .add(key: "weightKg", value: weightKg)
            .add(key: "discountRate", value: discountRate)
            .add(key: "isGift", value: isGift)
            .add(key: "tags", value: tags)
            .add(key: "lineItemSkus", value: lineItemSkus)
            .add(key: "shippingAddress", value: shippingAddress)
    }
}

/// The order's nested object.
public final class BenchShippingAddress: Storable {
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

    public required init(dataObject: DataObject) {
        recipient = dataObject.get("recipient")
        line1 = dataObject.get("line1")
        city = dataObject.get("city")
        postcode = dataObject.get("postcode")
        instructions = dataObject.get("instructions")
    }

    public func toDataObject() -> DataObject {
        DataObject(self)
            .add(key: "recipient", value: recipient)
            .add(key: "line1", value: line1)
            .add(key: "city", value: city)
            .add(key: "postcode", value: postcode)
            .add(key: "instructions", value: instructions)
    }
}

/// The order of `index`'s values, from which every store's form of the order is built.
struct OrderValues {
    static let titles = [
        "Stainless steel water bottle, 750 ml", "Ceramic pour-over coffee dripper", "Merino wool hiking socks, pair",
        "Cast iron skillet, 26 cm, pre-seasoned", "Bamboo cutting board with juice groove",
    ]
    static let descriptions = [
        "Double-walled and vacuum insulated: keeps drinks cold for 24 hours and hot for 12, with a leak-proof lid.",
        "Hand-glazed ceramic dripper with a spiral interior for an even extraction; fits most mugs and carafes.",
        "Cushioned soles, reinforced heels and toes, and breathable merino wool that stays warm when it is wet.",
        "Heavy cast iron that holds its heat evenly; oven safe to 260 degrees, and it only improves with use.",
        "Sustainably grown bamboo, gentle on knife edges, with a deep groove that keeps juices off the bench top.",
    ]
    static let statuses = ["awaiting shipment", "packed for dispatch", "shipped by courier", "delivered to customer"]
    static let tagSets = [
        ["kitchen", "outdoor", "insulated", "bpa-free", "gift-idea"],
        ["coffee", "ceramic", "handmade", "brewing", "kitchen"],
        ["apparel", "outdoor", "hiking", "merino", "winter"],
    ]

    let orderNumber: String, title: String, productDescription: String
    let customerName: String, customerEmail: String, status: String
    let customerId: Int, quantity: Int, unitPriceCents: Int, warehouseId: Int
    let weightKg: Double, discountRate: Double, isGift: Bool
    let tags: [String], lineItemSkus: [Int]
    let recipient: String, line1: String, city: String, postcode: String, instructions: String

    init(index: Int) {
        orderNumber = "ORD-2026-\(100_000_000 + index)"
        title = "\(Self.titles[index % 5]), model \(index % 1000)"
        productDescription = Self.descriptions[index % 5]
        customerName = "Alexandra Customer-\(index % 50_000)"
        customerEmail = "customer.\(index)@shop.example.com"
        status = Self.statuses[index % 4]
        customerId = 100_000 + index % 50_000
        quantity = 1 + index % 12
        unitPriceCents = 499 + (index % 300) * 25
        warehouseId = index % 17
        weightKg = 0.25 + Double(index % 400) / 8
        discountRate = Double(index % 20) / 100
        isGift = index % 5 == 0
        tags = Self.tagSets[index % 3]
        lineItemSkus = [10_000 + index % 1000, 20_000 + index % 777, 30_000 + index % 333, 40_000 + index % 97]
        recipient = "Alexandra Customer-\(index % 50_000)"
        line1 = "Level \(index % 40), \(index % 900) Collins Street"
        city = "Melbourne"
        postcode = "3000"
        instructions = "Leave with building reception if nobody answers"
    }
}
