import LocalLMDBLMDB
import LocalLMDBJSON
import LocalLMDBStore
import LocalLMDBEngine
#if canImport(Observation)
import Observation

/// The latest value of a database observation, held on the main actor for SwiftUI: an
/// `@Observable` object whose `value` follows the database.
///
/// ```swift
/// struct PeopleView: View {
///     @State private var people = database.liveQuery(Person.self)   // LiveQuery<[Person]>
///     var body: some View {
///         List(people.value, id: \.name) { Text($0.name) }
///     }
/// }
/// ```
///
/// It iterates a `DatabaseObservation` on the main actor (so models are decoded there and need
/// not be `Sendable`), and stops when it is released or `stop()` is called. The async
/// sequences (`observe(_:id:)`, `observeAll(_:)`) are the core API; this is a convenience over
/// them where the Observation module exists.
@MainActor @Observable
public final class LiveQuery<Value> {
    /// The value read after the latest commit that changed it (`initial` until the first read).
    public private(set) var value: Value
    /// The error that ended the observation, if one did (the database was closed, for example).
    public private(set) var error: LocalDatabaseError?

    @ObservationIgnored private let following: Following

    /// Follows `observation`, starting from `initial`.
    public init(_ observation: DatabaseObservation<Value>, initial: Value) {
        value = initial
        following = Following()
        following.task = Task { [weak self] in
            do throws(LocalDatabaseError) {
                for try await value in observation {
                    guard let self else { return }
                    self.value = value
                }
            } catch {
                self?.error = error
            }
        }
    }

    /// Stops following the database; `value` keeps its last value.
    public func stop() {
        following.task?.cancel()
    }

    /// Cancels the task that follows the database when the query is released.
    private final class Following {
        var task: Task<Void, Never>?

        deinit {
            task?.cancel()
        }
    }
}

extension LocalDatabase {
    /// Every object stored as `T`, kept up to date on the main actor (see `LiveQuery`).
    @MainActor
    public func liveQuery<T: Persistable>(_ type: T.Type) -> LiveQuery<[T]> {
        LiveQuery(observeAll(type), initial: [])
    }

    /// The records `query` selects, kept up to date on the main actor (see `LiveQuery`).
    @MainActor
    public func liveQuery<T: Persistable>(_ query: Query<T>) -> LiveQuery<[T]> {
        LiveQuery(observe(query), initial: [])
    }

    /// The object stored under `id`, kept up to date on the main actor (see `LiveQuery`).
    @MainActor
    public func liveObject<T: Persistable>(_ type: T.Type, id: String) -> LiveQuery<T?> {
        LiveQuery(observe(type, id: id), initial: nil)
    }
}
#endif
