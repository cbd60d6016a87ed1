import LocalLMDBBase

/// Parses JSON (RFC 8259) from bytes into `JSONValue` trees: `JSONValidator` checks the
/// document, then `JSONScanner` builds the tree from the checked bytes.
///
/// Trees are for data objects being changed and for documents that repeat a key; reading a
/// stored record's fields happens in place (see `DataObject`) without building one.
@usableFromInline package enum JSONReader {
    /// The deepest nesting of arrays and objects accepted.
    @inlinable static var maxDepth: Int { JSONValidator.maxDepth }

    /// Parses one complete JSON document.
    /// - Throws: `DatabaseError.invalidJSON`, with the offset of the problem.
    @inlinable static func parse(_ input: UnsafeRawBufferPointer) throws(DatabaseError) -> JSONValue {
        let summary = try JSONValidator.validate(input)
        return JSONScanner(input).value(at: summary.start, mayRepeatKeys: summary.mayRepeatKeys).value
    }

    /// Parses one complete JSON document that must be an object.
    @inlinable static func parseObject(_ input: UnsafeRawBufferPointer) throws(DatabaseError) -> JSONObject {
        let summary = try JSONValidator.validateObject(input)
        return JSONScanner(input).object(at: summary.start, mayRepeatKeys: summary.mayRepeatKeys).object
    }
}
