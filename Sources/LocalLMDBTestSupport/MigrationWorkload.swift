import LocalLMDB

/// A person as version 1 of an app stored it: one `name` field.
public final class PersonV1: Storable {
    public let name: String
    public let visits: Int

    public init(name: String, visits: Int = 0) {
        self.name = name
        self.visits = visits
    }

    public required init(dataObject: DataObject) {
        name = dataObject.get("name")
        visits = dataObject.get("visits")
    }

    public func toDataObject() -> DataObject {
        DataObject(self).add(key: "name", value: name).add(key: "visits", value: visits)
    }
}

/// The same person as version 2 stores it, under another class name: the name split in two,
/// the last one indexed, and `visits` counting the migrations that transformed it.
public final class PersonV2: Storable {
    public let first: String
    public let last: String
    public let visits: Int

    public init(first: String, last: String, visits: Int) {
        self.first = first
        self.last = last
        self.visits = visits
    }

    public required init(dataObject: DataObject) {
        first = dataObject.get("first")
        last = dataObject.get("last")
        visits = dataObject.get("visits")
    }

    public func toDataObject() -> DataObject {
        DataObject(self).add(key: "first", value: first).add(key: "last", value: last).add(key: "visits", value: visits)
    }

    public static var indexes: [Index] { [Index.on("last")] }
}

/// The migration tests' workload, shared with the helper process that a test kills.
public enum MigrationWorkload {
    /// The id of person `number`.
    public static func id(_ number: Int) -> String { "person-\(number)" }

    /// Person `number`'s name in version 1.
    public static func name(_ number: Int) -> String { "Given\(number) Family\(number % 97)" }

    /// The migrator of version 2: "split names" first counts a visit on each `PersonV1` in
    /// place (the same class, under the same id: a record walked twice would count two), then
    /// turns each into a `PersonV2` under the same id, keeping the count.
    public static func migrator(batchSize: Int) -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("split names", batchSize: batchSize, steps: [
            .transform(PersonV1.self) { record in
                let name: String = record.document.get("name")
                let visits: Int = record.document.get("visits")
                return .replace(with: PersonV1(name: name, visits: visits + 1))
            },
            .transform(PersonV1.self) { record in
                let name: String = record.document.get("name")
                let visits: Int = record.document.get("visits")
                let parts = name.split(separator: " ", maxSplits: 1).map(String.init)
                return .replace(with: PersonV2(first: parts.first ?? "", last: parts.count > 1 ? parts[1] : "", visits: visits))
            },
        ])
        return migrator
    }
}
