import LocalLMDBLMDB

/// Which database, if any, the calling thread is restoring objects from: set by the model
/// layer around each read that runs models' initializers, asked by the engine before a
/// blocking call, which from such an initializer could wait for itself (`wouldDeadlock`).
///
/// Confinement: each thread has its own (`ThreadLocal`).
package final class RestoringThread {
    /// The calling thread's mark.
    package static var current: RestoringThread {
        @inline(__always) get { marks.current }
    }

    private static let marks = ThreadLocal { RestoringThread() }

    /// The `DatabaseEngine.serial` of the database being read from; 0 outside a read.
    package var database: UInt64 = 0

    /// Whether this thread is restoring objects read from the database `serial`.
    package func isRestoring(from serial: UInt64) -> Bool {
        database != 0 && database == serial
    }
}
