import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBStore
import Testing

// Models of these tests alone: Legacy's registry is process-wide, so the renamed class has a
// name no other test uses. Both refer to `Owner` (ReferenceTests.swift).

/// A parent as an earlier version of the app named it: its records are stored under
/// "GapGarageBefore".
struct GapGarageBefore: Codable, Persistable {
    var name: String
    var keeper: Reference<Owner>
    var regulars: [Reference<Owner>]
}

/// The same parent after its class was renamed (`Legacy.addClassRefactor`), with an index on its
/// reference's id.
struct GapGarageAfter: Codable, Persistable {
    static let indexes: [Index] = [.on("keeper.$ref")]
    var name: String
    var keeper: Reference<Owner>
    var regulars: [Reference<Owner>]
}

/// A car and its owner, in one line: what the observers below compare.
private func describe(_ car: Car) -> String {
    "\(car.plate):\(car.owner.model?.name ?? "?")"
}

/// Iterates `observation` in a task of its own and hands each value, summarized by `summary`,
/// to the returned stream (finished when the iteration ends), so that a test can wait on the
/// values one at a time while the observation runs as an app's would.
private func follow<Value>(
    _ observation: DatabaseObservation<Value>, _ summary: @escaping @Sendable (Value) -> String
) -> (values: AsyncStream<String>, task: Task<Void, any Error>) {
    let (values, continuation) = AsyncStream.makeStream(of: String.self)
    let task = Task {
        defer { continuation.finish() }
        for try await value in observation { continuation.yield(summary(value)) }
    }
    return (values, task)
}

@Suite("References: renamed parents and observers")
struct ReferenceGapTests {
    /// Records written under a parent class's old name, with references to children, are read as
    /// the renamed type: by id, by type, by a query on the reference's id, and deleted with their
    /// children; their references resolve as for records of the new name.
    @Test func aRenamedParentClassReadsItsOldRecordsWithReferencesResolved() async throws {
        try await withDatabase { database, _ in
            let ada = Owner(id: "ada", name: "Ada")
            let bob = Owner(id: "bob", name: "Bob")
            _ = try await database.write(contentsOf: [
                Record(id: "g1", data: GapGarageBefore(name: "North", keeper: Reference(ada), regulars: [Reference(bob), Reference(ada)])),
                Record(id: "g2", data: GapGarageBefore(name: "South", keeper: Reference(bob), regulars: [])),
            ])
            #expect(try await database.count(Owner.self) == 2)
            Legacy.addClassRefactor(old: "GapGarageBefore", new: "GapGarageAfter")
            defer { Legacy.removeClassRefactor(old: "GapGarageBefore") }

            // By id: the references resolve, one instance per id.
            let north = try #require(try await database.read(id: "g1") as GapGarageAfter?)
            #expect(north.name == "North")
            #expect(north.keeper.id == "ada")
            #expect(north.keeper.model?.name == "Ada")
            #expect(north.regulars.map(\.id) == ["bob", "ada"])
            #expect(north.regulars.map { $0.model?.name } == ["Bob", "Ada"])
            #expect(north.regulars[1].model === north.keeper.model)

            // By type: every old record, and one instance per id across the records of the read.
            let all = (try await database.read() as [GapGarageAfter]).sorted { $0.name < $1.name }
            #expect(all.map(\.name) == ["North", "South"])
            try #require(all.count == 2)
            #expect(all[1].keeper.model?.name == "Bob")
            #expect(all[0].regulars[0].model === all[1].keeper.model)
            #expect(Set(try await database.readIDs(GapGarageAfter.self)) == ["g1", "g2"])
            #expect(try await database.count(GapGarageAfter.self) == 2)

            // By a query on the reference's id, through the index the new type declares.
            let bobs = try await database.read(Query(GapGarageAfter.self).filter("keeper.$ref", .equals("bob")))
            #expect(bobs.map(\.name) == ["South"])
            #expect(bobs.first?.keeper.model?.name == "Bob")

            // A child changed by itself is seen through the old parent records.
            try await database.write(Owner(id: "ada", name: "Countess"))
            #expect((try await database.read(id: "g1") as GapGarageAfter?)?.keeper.model?.name == "Countess")

            // The cascading delete, asked of the new type, takes the old record and its children.
            #expect(try await database.delete(GapGarageAfter.self, id: "g1", includingReferenced: true) == 3)
            #expect(try await database.count(Owner.self) == 0)
            await #expect(throws: LocalDatabaseError.missingReference(id: "g2", field: "keeper", referencedID: "bob")) {
                _ = try await database.read(id: "g2") as GapGarageAfter?
            }
        }
    }

    /// References.md, *Observation*: "Observers of the parent's type are told of the parent's
    /// writes only: a change made to a child alone does not notify them." A child written alone
    /// is told to the observers of the child's type; the next thing each observer of the
    /// parent's type receives is the parent's later write, not the child's.
    @Test func observersOfTheParentsTypeAreNotToldOfAChildWrittenAlone() async throws {
        try await withDatabase { database, _ in
            try await database.write(Record(id: "car1", data: Car(plate: "L1", owner: Reference(Owner(id: "ada", name: "Ada")), previousOwner: nil, drivers: [])))

            // The parent's type: its change feed, and observations running in tasks of their own.
            var parentCommits = database.changes(of: Car.self).makeAsyncIterator()
            let (allCars, allTask) = follow(database.observeAll(Car.self)) { $0.map(describe).joined(separator: ",") }
            defer { allTask.cancel() }
            let (oneCar, oneTask) = follow(database.observe(Car.self, id: "car1")) { $0.map(describe) ?? "nil" }
            defer { oneTask.cancel() }
            let (adasCars, queryTask) = follow(database.observe(Query(Car.self).filter("owner.$ref", .equals("ada")))) {
                $0.map(describe).joined(separator: ",")
            }
            defer { queryTask.cancel() }
            var allValues = allCars.makeAsyncIterator()
            var oneValues = oneCar.makeAsyncIterator()
            var queryValues = adasCars.makeAsyncIterator()
            #expect(await allValues.next() == "L1:Ada")
            #expect(await oneValues.next() == "L1:Ada")
            #expect(await queryValues.next() == "L1:Ada")
            // The child's type.
            var childCommits = database.changes(of: Owner.self).makeAsyncIterator()
            var child = database.observe(Owner.self, id: "ada").makeAsyncIterator()
            #expect(try await child.next()??.name == "Ada")

            // The child alone: its type's observers are told.
            let beforeChild = try database.changeToken()
            try await database.write(Owner(id: "ada", name: "Countess"))
            #expect(try await childCommits.next()?.changes == [.written(id: "ada", className: "Owner")])
            #expect(try await child.next()??.name == "Countess")

            // The rule itself, without timing: the child's commit concerns none of the parent's
            // observations, and does concern the child's.
            let childAlone = try database.changes(since: beforeChild).commits.flatMap(\.changes)
            #expect(childAlone == [.written(id: "ada", className: "Owner")])
            let parentRelevance = [
                database.observeAll(Car.self).isRelevant,
                database.observe(Query(Car.self)).isRelevant,
            ]
            let parentByID = database.observe(Car.self, id: "car1")
            let toldToParents = childAlone.filter { change in
                parentRelevance.contains { $0(change.logged) } || parentByID.isRelevant(change.logged)
            }
            #expect(toldToParents.isEmpty)
            #expect(childAlone.allSatisfy { database.observe(Owner.self, id: "ada").isRelevant($0.logged) })

            // Then a new parent: the next commit of the parent's feed, and the next value of its
            // type's observations, are this write (with the child as it is now).
            try await database.write(Record(id: "car2", data: Car(plate: "L2", owner: Reference(id: "ada"), previousOwner: nil, drivers: [])))
            #expect(try await parentCommits.next()?.changes == [.written(id: "car2", className: "Car")])
            #expect(await allValues.next() == "L1:Countess,L2:Countess")
            #expect(await queryValues.next() == "L1:Countess,L2:Countess")
            // The observer of car1 alone hears of car1's own next write, not of the child's.
            try await database.write(Record(id: "car1", data: Car(plate: "L1b", owner: Reference(id: "ada"), previousOwner: nil, drivers: [])))
            #expect(try await parentCommits.next()?.changes == [.written(id: "car1", className: "Car")])
            #expect(await oneValues.next() == "L1b:Countess")
        }
    }
}
