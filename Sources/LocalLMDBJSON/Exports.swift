// The codec's users name the shared vocabulary it throws and guards with (`DatabaseError`,
// `StackGuard`) through it.
@_exported import LocalLMDBBase
