import Foundation
@testable import LocalLMDB
@testable import LocalLMDBEngine
@testable import LocalLMDBJSON
@testable import LocalLMDBLMDB
@testable import LocalLMDBStore
import LocalLMDBTestSupport
import Testing

// Many tasks and threads coding models at once.
extension CodableAdversarialTests {
    @Test func manyTasksWriteAndReadAtOnce() async throws {
        try await withDatabase { database, _ in
            let tasks = 8
            let perTask = 40
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<tasks {
                    group.addTask {
                        for index in 0..<perTask {
                            let model = CbConcurrent(id: "t\(task)-\(index)", task: task, index: index, payload: ["i": Double(index), "object": .nan])
                            if index % 10 == 0 {
                                try await database.write(contentsOf: [model])
                            } else {
                                try await database.write(model)
                            }
                            let read = try #require(try await database.read(CbConcurrent.self, id: model.id))
                            #expect(read.task == task && read.index == index && read.payload["object"]?.isNaN == true)
                            if index % 8 == 0 {
                                let all: [CbConcurrent] = try await database.read()
                                #expect(all.contains { $0.id == model.id })
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await database.count(CbConcurrent.self) == tasks * perTask)
            let all: [CbConcurrent] = try await database.read()
            #expect(Set(all.map(\.id)).count == tasks * perTask)
        }
    }

    /// Classes first met concurrently (nested subclasses each task writes into a fresh
    /// database) are claimed once and resolved by every reader.
    @Test func nestedClassesFirstWrittenByManyTasksAtOnce() async throws {
        try await withBothFaces { database, sync in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<8 {
                    group.addTask {
                        let shapes: [CbShape] = [CbCircle(name: "c\(task)", radius: Double(task)), CbSquare(name: "s\(task)", side: task), CbShape(name: "p")]
                        let drawing = CbDrawing(title: "\(task)", main: shapes[task % 3], shapes: shapes, optionalShape: nil, byName: ["k": shapes[0]])
                        try await database.write(Record(id: "d\(task)", data: drawing))
                        let read = try #require(try await database.read(id: "d\(task)") as CbDrawing?)
                        #expect(read.shapes.map { String(describing: type(of: $0)) } == ["CbCircle", "CbSquare", "CbShape"])
                        #expect((read.byName["k"] as? CbCircle)?.radius == Double(task))
                    }
                }
                try await group.waitForAll()
            }
            let all: [CbDrawing] = try await database.read()
            #expect(all.count == 8 && all.allSatisfy { ($0.shapes[1] as? CbSquare)?.side == Int($0.title) })
            #expect((sync.read() as [CbDrawing]).count == 8)
            #expect(try await database.verifyIntegrity().isConsistent)
        }
    }

    @Test func manyThreadsUseTheSynchronousFaceAtOnce() async throws {
        try await withTemporaryDirectory { directory in
            let database = try SerializationDatabase(directory: directory)
            let threads = 8
            let perThread = 30
            let failures = Locked(0)
            DispatchQueue.concurrentPerform(iterations: threads) { thread in
                for index in 0..<perThread {
                    let model = CbConcurrent(id: "s\(thread)-\(index)", task: thread, index: index, payload: [:])
                    let written = database.write(model)
                    let read = database.read(CbConcurrent.self, id: model.id)
                    if !written || read != model { failures.withLock { $0 += 1 } }
                }
            }
            #expect(failures.withLock { $0 } == 0)
            #expect(database.count(CbConcurrent.self) == threads * perThread)
            #expect(database.lastError == nil)
        }
    }
}
