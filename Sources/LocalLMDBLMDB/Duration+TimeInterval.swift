import Foundation

extension Duration {
    /// The duration in seconds, for Foundation's deadlines.
    package var timeInterval: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
