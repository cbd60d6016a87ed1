import BenchmarkCore
import Foundation

func log(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// The comparison of one model: every contender set up with the same objects and ids, then each
/// workload's repetitions, then each store's size and memory.
struct ModelRun {
    let model: BenchModel
    let ids: [String]
    let contenderTypes: [any Contender.Type]
    let workloads: [Workload]
    let repetitions: Int

    struct Outcome {
        var results: [Result] = []
        var footprints: [Footprint] = []
        var notes: [String] = []
    }

    func run() async throws -> Outcome {
        var outcome = Outcome()
        // Raw LMDB's objects are encoded once, before any timing, for every raw LMDB store of the run.
        let encoded = contenderTypes.contains { $0.name == RawLMDB.name } ? EncodedObjects(model: model, count: ids.count) : nil

        func open(_ type: any Contender.Type) throws -> (any Contender, URL) {
            let directory = try Fixture.temporaryDirectory(type.name.replacingOccurrences(of: " ", with: "-"))
            let store = try type.init(directory: directory, model: model)
            if let raw = store as? RawLMDB, let encoded { raw.prepare(encoded) }
            return (store, directory)
        }

        // Every contender is set up first; then each repetition of a workload runs every contender
        // in turn, so that a slow spell of this shared machine slows them all alike rather than one.
        var stores: [(type: any Contender.Type, store: any Contender, directory: URL)] = []
        var disks: [DiskUsage] = []
        for type in contenderTypes {
            log("setting up \(type.name) (\(model.rawValue))…")
            let (store, directory) = try open(type)
            if let sqlite = store as? SwiftLocalOnSQLite { outcome.notes.append("SwiftLocal on SQLite: PRAGMA synchronous = \(try sqlite.synchronousSetting()) (2 = FULL)") }
            if let grdb = store as? GRDBCodable { outcome.notes.append("GRDB Codable: PRAGMA synchronous = \(try grdb.synchronousSetting()) (2 = FULL)") }
            try await store.writeBatch(ids: ids, firstIndex: 0)
            disks.append(DiskUsage(directory: directory))
            try await verify(store)
            stores.append((type, store, directory))
        }

        var reads = Array(repeating: [ReadMemory](), count: stores.count)
        for workload in workloads {
            var seconds = Array(repeating: [Double](), count: stores.count)
            var measuresMemory = false
            for _ in 0..<repetitions {
                let order = ids.shuffled()
                for (index, entry) in stores.enumerated() {
                    var target = entry.store
                    var scratch: URL?
                    if workload.needsEmptyStore {
                        let fresh = try open(entry.type)
                        target = fresh.0
                        scratch = fresh.1
                    }
                    let clock = ContinuousClock()
                    let start = clock.now
                    let read = try await workload.run(target, order)
                    seconds[index].append(read?.seconds ?? Self.seconds(clock.now - start))
                    measuresMemory = measuresMemory || read != nil
                    if let scratch { try? FileManager.default.removeItem(at: scratch) }
                }
            }
            // The read of every object again, untimed, as many times, for its memory: with the
            // heap's free pages returned and the store's file pages unmapped first, so that its
            // resident growth is its own and counts every page it maps. After the timed reads,
            // so that trimming the heap changes nothing they find.
            for _ in 0..<(measuresMemory ? repetitions : 0) {
                for (index, entry) in stores.enumerated() {
                    MemoryProbe.trimHeap()
                    MemoryProbe.dropMappedPages(under: entry.directory)
                    if let measured = try await workload.run(entry.store, ids) { reads[index].append(measured.memory) }
                }
            }
            for (index, entry) in stores.enumerated() {
                let result = Result(workload: workload.name, unit: workload.unit, contender: entry.type.name, operations: workload.operations, seconds: seconds[index])
                log(String(format: "  %-20@ %-32@ best %10.0f/s  median %10.0f/s", entry.type.name, workload.name, result.bestRate, result.medianRate))
                outcome.results.append(result)
            }
        }
        for (index, entry) in stores.enumerated() {
            outcome.footprints.append(Footprint(contender: entry.type.name, disk: disks[index], reads: reads[index]))
        }

        let directories = stores.map(\.directory)
        stores.removeAll()  // close every store before removing its files
        for directory in directories { try? FileManager.default.removeItem(at: directory) }
        return outcome
    }

    /// Checks that the set-up write stored every object and that reads return the right ones
    /// (raw LMDB's reads return the stored JSON's length, the others a field of the object).
    func verify(_ store: any Contender) async throws {
        let counted = try await store.count()
        guard counted == ids.count else { throw WorkloadFailure(reason: "\(type(of: store).name) counted \(counted) of \(ids.count)") }
        for index in Set([0, ids.count / 2, ids.count - 1]) {
            let expected = store is RawLMDB ? model.json(index: index).count : model.probe(index: index)
            let read = try await store.read(id: ids[index])
            guard read == expected else {
                throw WorkloadFailure(reason: "\(type(of: store).name) read \(read) for object \(index), not \(expected)")
            }
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
