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
    /// Contenders with ratios of their own, in a table after the main one: each one's best rate
    /// divided by each named contender's (a variant of the first contender, such as LocalLMDB
    /// with Codable models, set against the first and against its counterpart elsewhere). The
    /// main table's ratios leave these contenders out, as they would repeat the inverse.
    public let variants: [(contender: String, against: [String])]
    /// The heading of this report's chart, when several are drawn in one SVG (the model's name).
    public let chartTitle: String

    public init(
        results: [Result], contenders: [String], header: String, variants: [(contender: String, against: [String])] = [],
        chartTitle: String = ""
    ) {
        self.results = results
        self.contenders = contenders
        self.header = header
        self.chartTitle = chartTitle
        // A variant that ran first is the main table's subject already.
        self.variants = variants.filter { contenders.dropFirst().contains($0.contender) }
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

    /// The table: best (median) throughput per contender, the first contender's best-vs-best
    /// ratios, then each variant's ratios.
    public var markdown: String {
        let first = contenders[0]
        let variantNames = variants.map(\.contender)
        let others = contenders.dropFirst().filter { !variantNames.contains($0) }
        var lines = [header, ""]
        lines.append("| workload | " + contenders.map { "\($0) best (median)" }.joined(separator: " | ")
            + others.map { " | \(first) ÷ \($0)" }.joined() + " |")
        lines.append("|---|" + Array(repeating: "---:|", count: contenders.count + others.count).joined())
        for workload in workloads {
            var cells = [workload]
            for contender in contenders {
                if let result = result(workload, contender) {
                    cells.append("\(Self.rate(result.bestRate)) (\(Self.rate(result.medianRate)))")
                } else {
                    cells.append("n/a")
                }
            }
            for contender in others { cells.append(ratio(workload, first, contender)) }
            lines.append("| " + cells.joined(separator: " | ") + " |")
        }
        for variant in variants {
            let against = variant.against.filter(contenders.contains)
            guard !against.isEmpty else { continue }
            lines.append("")
            lines.append("\(variant.contender), best vs best:")
            lines.append("")
            lines.append("| workload | " + against.map { "\(variant.contender) ÷ \($0)" }.joined(separator: " | ") + " |")
            lines.append("|---|" + Array(repeating: "---:|", count: against.count).joined())
            for workload in workloads {
                lines.append("| " + ([workload] + against.map { ratio(workload, variant.contender, $0) }).joined(separator: " | ") + " |")
            }
        }
        var scaling: [String] = []
        for contender in [first] + variantNames {
            if let one = result("read by id, 1 task", contender), let two = result("read by id, 2 tasks", contender) {
                scaling.append(String(format: "%@ scaling from 1 to 2 reading tasks: %.2f× (best vs best).", contender, two.bestRate / one.bestRate))
            }
        }
        if !scaling.isEmpty { lines += [""] + scaling }
        return lines.joined(separator: "\n") + "\n"
    }

    /// `contender`'s best rate divided by `other`'s, for the table.
    func ratio(_ workload: String, _ contender: String, _ other: String) -> String {
        guard let ours = result(workload, contender), let theirs = result(workload, other) else { return "n/a" }
        return String(format: "%.2f×", ours.bestRate / theirs.bestRate)
    }

    /// Each contender's colour in the chart, the same whichever contenders ran.
    static func color(_ contender: String, index: Int) -> String {
        let known = [
            LocalLMDBHandWrittenContender.name: "#2b6cb0", LocalLMDBCodableContender.name: "#63b3ed",
            SwiftLocalOnSQLite.name: "#c05621", GRDBCodable.name: "#2f855a", RawLMDB.name: "#718096",
        ]
        let spare = ["#6b46c1", "#b83280", "#d69e2e", "#319795"]
        return known[contender] ?? spare[index % spare.count]
    }

    static let barHeight = 16, gap = 4, groupGap = 18, labelWidth = 230, chartWidth = 520

    /// A horizontal bar chart: per workload, each contender's best throughput relative to the
    /// fastest contender in that workload, labelled with its rate.
    public var svg: String { Self.svg([self]) }

    /// The charts of several reports (one per model), one after the other in one SVG.
    public static func svg(_ reports: [Report]) -> String {
        var body = ""
        var y = 30
        for (index, report) in reports.enumerated() {
            let chart = report.chart(top: y + (index > 0 ? 16 : 0))
            body += chart.svg
            y = chart.bottom
        }
        return """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(labelWidth + chartWidth + 140)" height="\(y + 20)" font-family="Helvetica, Arial, sans-serif" font-size="12">
        <rect width="100%" height="100%" fill="white"/>
        <text x="10" y="20" font-size="15" font-weight="bold">Throughput relative to the fastest contender (best of runs; longer is faster)</text>

        """ + body + "</svg>\n"
    }

    /// This report's chart from `top` down: its title (if any), the legend, then the bars.
    func chart(top: Int) -> (svg: String, bottom: Int) {
        let (barHeight, gap, groupGap, labelWidth, chartWidth) = (Self.barHeight, Self.gap, Self.groupGap, Self.labelWidth, Self.chartWidth)
        let groups = workloads
        var svg = ""
        var legendTop = top
        if !chartTitle.isEmpty {
            svg += "<text x=\"10\" y=\"\(top + 16)\" font-size=\"14\" font-weight=\"bold\">\(chartTitle)</text>\n"
            legendTop += 24
        }
        for (index, contender) in contenders.enumerated() {
            let x = 10 + index * 190
            svg += "<rect x=\"\(x)\" y=\"\(legendTop)\" width=\"12\" height=\"12\" fill=\"\(Self.color(contender, index: index))\"/>"
            svg += "<text x=\"\(x + 16)\" y=\"\(legendTop + 10)\">\(contender)</text>\n"
        }
        var y = legendTop + 20
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
                svg += "<rect x=\"\(labelWidth)\" y=\"\(barY)\" width=\"\(width)\" height=\"\(barHeight)\" fill=\"\(Self.color(contender, index: index))\"/>"
                svg += "<text x=\"\(labelWidth + width + 6)\" y=\"\(barY + 12)\">\(Self.rate(result.bestRate))</text>\n"
            }
            y += contenders.count * (barHeight + gap) + groupGap
        }
        return (svg, y)
    }
}
