/// Indents JSON text for display, keeping every token as it is written: members in their
/// stored order, numbers with all their digits (a parser would round them to `Double`).
enum PrettyJSON {
    /// `json` (valid JSON) with one member or element a line, indented by two spaces.
    static func indent(_ json: String) -> String {
        var output: [UInt8] = []
        var depth = 0
        var inString = false
        var escaped = false
        let bytes = Array(json.utf8)
        func newline() {
            output.append(UInt8(ascii: "\n"))
            output.append(contentsOf: repeatElement(UInt8(ascii: " "), count: depth * 2))
        }
        for (index, byte) in bytes.enumerated() {
            if inString {
                output.append(byte)
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
                output.append(byte)
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                output.append(byte)
                // An empty container stays on one line.
                let next = bytes[(index + 1)...].first { ![0x20, 0x0A, 0x0D, 0x09].contains($0) }
                if next == UInt8(ascii: "}") || next == UInt8(ascii: "]") { continue }
                depth += 1
                newline()
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                let previous = output.last { ![0x20, 0x0A, 0x0D, 0x09].contains($0) }
                if previous != UInt8(ascii: "{") && previous != UInt8(ascii: "[") {
                    depth = max(0, depth - 1)
                    while let last = output.last, last == 0x20 || last == 0x0A { output.removeLast() }
                    newline()
                }
                output.append(byte)
            case UInt8(ascii: ","):
                output.append(byte)
                newline()
            case UInt8(ascii: ":"):
                output.append(contentsOf: [UInt8(ascii: ":"), UInt8(ascii: " ")])
            case 0x20, 0x0A, 0x0D, 0x09:
                continue
            default:
                output.append(byte)
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// `text` as a JSON string literal.
    static func string(_ text: String) -> String {
        var output = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case _ where scalar.value < 0x20: output += String(format: "\\u%04x", scalar.value)
            default: output.unicodeScalars.append(scalar)
            }
        }
        return output + "\""
    }
}
