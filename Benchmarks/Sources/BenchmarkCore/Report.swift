import Foundation

/// The timings of one workload for one contender.
public struct Result: Sendable {
    public let workload: String
    public let unit: String
    public let contender: String
    public let operations: Int
    /// Seconds per repetition, in the order run.
    public let seconds: [Double]

    public init(workload: String, unit: String, contender: String, operations: Int, seconds: [Double]) {
        self.workload = workload
        self.unit = unit
        self.contender = contender
        self.operations = operations
        self.seconds = seconds
    }

    public var best: Double { seconds.min() ?? .nan }
    public var median: Double {
        let sorted = seconds.sorted()
        guard !sorted.isEmpty else { return .nan }
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
    public var bestRate: Double { Double(operations) / best }
    public var medianRate: Double { Double(operations) / median }
}

/// Formats results as a Markdown table and an SVG bar chart.
public struct Report {
    public let results: [Result]
    public let contenders: [String]
    public let header: String

    public init(results: [Result], contenders: [String], header: String) {
        self.results = results
        self.contenders = contenders
        self.header = header
    }

    var workloads: [String] {
        var seen: [String] = []
        for result in results where !seen.contains(result.workload) { seen.append(result.workload) }
        return seen
    }

    func result(_ workload: String, _ contender: String) -> Result? {
        results.first { $0.workload == workload && $0.contender == contender }
    }

    static func rate(_ value: Double) -> String {
        switch value {
        case 1_000_000...: return String(format: "%.2f M/s", value / 1_000_000)
        case 1_000...: return String(format: "%.1f k/s", value / 1_000)
        default: return String(format: "%.0f /s", value)
        }
    }

    /// The table: best (median) throughput per contender, and LocalLMDB's best-vs-best ratios.
    public var markdown: String {
        let first = contenders[0]
        var lines = [header, ""]
        lines.append("| workload | " + contenders.map { "\($0) best (median)" }.joined(separator: " | ")
            + " | " + contenders.dropFirst().map { "\(first) ÷ \($0)" }.joined(separator: " | ") + " |")
        lines.append("|---|" + Array(repeating: "---:|", count: contenders.count * 2 - 1).joined())
        for workload in workloads {
            var cells = [workload]
            for contender in contenders {
                if let result = result(workload, contender) {
                    cells.append("\(Self.rate(result.bestRate)) (\(Self.rate(result.medianRate)))")
                } else {
                    cells.append("n/a")
                }
            }
            let ours = result(workload, first)
            for contender in contenders.dropFirst() {
                if let ours, let theirs = result(workload, contender) {
                    cells.append(String(format: "%.2f×", ours.bestRate / theirs.bestRate))
                } else {
                    cells.append("n/a")
                }
            }
            lines.append("| " + cells.joined(separator: " | ") + " |")
        }
        if let one = result("read by id, 1 task", first), let two = result("read by id, 2 tasks", first) {
            lines.append("")
            lines.append(String(format: "%@ scaling from 1 to 2 reading tasks: %.2f× (best vs best).", first, two.bestRate / one.bestRate))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A horizontal bar chart: per workload, each contender's best throughput relative to the
    /// fastest contender in that workload, labelled with its rate.
    public var svg: String {
        let colors = ["#2b6cb0", "#c05621", "#2f855a", "#718096"]
        let barHeight = 16, gap = 4, groupGap = 18, labelWidth = 230, chartWidth = 520, top = 50
        let groups = workloads
        let height = top + groups.count * (contenders.count * (barHeight + gap) + groupGap) + 20
        var svg = """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(labelWidth + chartWidth + 140)" height="\(height)" font-family="Helvetica, Arial, sans-serif" font-size="12">
        <rect width="100%" height="100%" fill="white"/>
        <text x="10" y="20" font-size="15" font-weight="bold">Throughput relative to the fastest contender (best of runs; longer is faster)</text>

        """
        for (index, contender) in contenders.enumerated() {
            let x = 10 + index * 190
            svg += "<rect x=\"\(x)\" y=\"30\" width=\"12\" height=\"12\" fill=\"\(colors[index % colors.count])\"/>"
            svg += "<text x=\"\(x + 16)\" y=\"40\">\(contender)</text>\n"
        }
        var y = top
        for workload in groups {
            let fastest = contenders.compactMap { result(workload, $0)?.bestRate }.max() ?? 1
            svg += "<text x=\"10\" y=\"\(y + barHeight)\" font-weight=\"bold\">\(workload)</text>\n"
            for (index, contender) in contenders.enumerated() {
                let barY = y + index * (barHeight + gap)
                guard let result = result(workload, contender) else {
                    svg += "<text x=\"\(labelWidth)\" y=\"\(barY + 12)\" fill=\"#999\">n/a</text>\n"
                    continue
                }
                let width = max(1, Int(Double(chartWidth) * result.bestRate / fastest))
                svg += "<rect x=\"\(labelWidth)\" y=\"\(barY)\" width=\"\(width)\" height=\"\(barHeight)\" fill=\"\(colors[index % colors.count])\"/>"
                svg += "<text x=\"\(labelWidth + width + 6)\" y=\"\(barY + 12)\">\(Self.rate(result.bestRate))</text>\n"
            }
            y += contenders.count * (barHeight + gap) + groupGap
        }
        return svg + "</svg>\n"
    }
}
