import LocalLMDBJSON
import LocalLMDBLMDB

/// Seals and opens the JSON documents of stored values: encryption at rest, in the store's
/// terms (bytes and key ids). The faces adapt their public cipher to it.
///
/// A sealed document must be authenticated: `open` fails, rather than giving other bytes, when
/// the sealed bytes or the associated data differ in any way from what `seal` was given.
package protocol ValueCipher: Sendable {
    /// The id of the key new values are sealed under.
    var sealingKeyID: String { get }
    /// Whether this cipher holds the key `keyID`.
    func hasKey(_ keyID: String) -> Bool
    /// Appends to `output` `plaintext` sealed under `keyID`, bound to `associatedData`. On a
    /// failure, `output` may hold part of it.
    func seal(
        _ plaintext: UnsafeRawBufferPointer, keyID: String, associatedData: UnsafeRawBufferPointer, appendingTo output: inout [UInt8]
    ) throws(CipherFailure)
    /// The plaintext of `sealed`, which `seal` made under `keyID` with `associatedData`, in a
    /// buffer of its own.
    func open(_ sealed: UnsafeRawBufferPointer, keyID: String, associatedData: UnsafeRawBufferPointer) throws(CipherFailure) -> JSONBuffer
}

/// Why a cipher could not seal or open a value.
package struct CipherFailure: Error, Sendable {
    package let reason: String

    package init(_ reason: String) {
        self.reason = reason
    }
}
