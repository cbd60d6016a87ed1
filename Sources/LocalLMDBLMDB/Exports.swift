// The layers above name the shared vocabulary (`DatabaseError`, `StackGuard`, …) through the
// wrapper, as they did before it had a target of its own.
@_exported import LocalLMDBBase
