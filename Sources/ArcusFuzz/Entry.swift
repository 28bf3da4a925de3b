import Foundation

/// What the executable does besides fuzzing, in either build:
///
///     ArcusFuzz list                          the targets and the entry point each calls
///     ArcusFuzz seed DIR [--target NAME]      seed corpora, DIR/NAME/seed-N
///     ArcusFuzz --target NAME FILE…           replays inputs (a finding of a fuzz run, say)
///
/// The fuzzing build (Tools/fuzz.sh) runs libFuzzer for any other arguments, on the target that
/// `--target=NAME` (or ARCUS_FUZZ_TARGET) names.
enum FuzzTool {
    /// Handles `arguments` (with `--target` already taken out); false when they ask for none of
    /// the above, which the fuzzing build hands to libFuzzer.
    static func run(_ arguments: [String], target name: String?) throws -> Bool {
        let targets = try name.map { name in
            guard let target = FuzzTargets.named(name) else { throw FuzzToolError("no target \(name); the targets: \(FuzzTargets.names)") }
            return [target]
        } ?? FuzzTargets.all
        switch arguments.first {
        case "list":
            for target in FuzzTargets.all { print("\(target.name)\t\(target.entryPoint)") }
        case "seed":
            guard let directory = arguments.dropFirst().first else { throw FuzzToolError("usage: ArcusFuzz seed DIR [--target NAME]") }
            for target in targets {
                let folder = "\(directory)/\(target.name)"
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                let seeds = target.seeds()
                for (i, seed) in seeds.enumerated() {
                    guard FileManager.default.createFile(atPath: "\(folder)/seed-\(i)", contents: Data(seed)) else {
                        throw FuzzToolError("could not write \(folder)/seed-\(i)")
                    }
                }
                print("\(target.name): \(seeds.count) seed inputs in \(folder)")
            }
        default:
            return false
        }
        return true
    }

    /// Replays files through one target.
    static func replay(_ paths: [String], target name: String?) throws {
        guard let name, let target = FuzzTargets.named(name) else {
            throw FuzzToolError("name the target the inputs are for: --target NAME (\(FuzzTargets.names))")
        }
        for path in paths {
            guard let data = FileManager.default.contents(atPath: path) else { throw FuzzToolError("\(path): cannot read") }
            target.run(Array(data))
            print("\(path): no finding (\(target.name))")
        }
    }

    /// `arguments` without `--target NAME` / `--target=NAME`, and the name.
    static func takeTarget(_ arguments: [String]) -> (rest: [String], name: String?) {
        var rest: [String] = []
        var name: String?
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--target", index + 1 < arguments.count {
                name = arguments[index + 1]
                index += 2
                continue
            }
            if argument.hasPrefix("--target=") {
                name = String(argument.dropFirst("--target=".count))
            } else {
                rest.append(argument)
            }
            index += 1
        }
        return (rest, name)
    }
}

struct FuzzToolError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

#if FUZZING
/// The target this process fuzzes, chosen once in `fuzzerMain` before libFuzzer's driver starts
/// and only read after.
nonisolated(unsafe) private var selectedTarget: FuzzTarget?

/// libFuzzer's entry point (Tools/fuzz.sh builds this with -sanitize=fuzzer -DFUZZING).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let target = selectedTarget else { return 0 }
    target.run(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
    return 0
}

@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// SwiftPM links executables through this renamed entry point, so libFuzzer's own `main` is never
/// used: take `--target=NAME` (or ARCUS_FUZZ_TARGET) out of the arguments, then hand over to
/// libFuzzer's driver with the rest.
@_cdecl("ArcusFuzz_main")
public func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    let pointers = (0..<Int(argc)).map { argv?[$0] }
    let words = pointers.map { $0.map { String(cString: $0) } ?? "" }
    let (rest, named) = FuzzTool.takeTarget(Array(words.dropFirst()))
    let name = named ?? ProcessInfo.processInfo.environment["ARCUS_FUZZ_TARGET"]
    do {
        if try FuzzTool.run(rest, target: name) { return 0 }
    } catch {
        FileHandle.standardError.write(Data("\(error)\n".utf8))
        return 2
    }
    guard let name, let target = FuzzTargets.named(name) else {
        FileHandle.standardError.write(Data("choose a target with --target=NAME (or ARCUS_FUZZ_TARGET): \(FuzzTargets.names)\n".utf8))
        return 2
    }
    selectedTarget = target
    // The program name and every argument but the target's, for libFuzzer; it keeps the vector
    // for the whole run, so it lives until the process exits.
    var kept = [pointers[0]]
    var index = 1
    while index < pointers.count {
        if words[index] == "--target" {
            index += 2
            continue
        }
        if !words[index].hasPrefix("--target=") { kept.append(pointers[index]) }
        index += 1
    }
    kept.append(nil)
    var count = Int32(kept.count - 1)
    let vector = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: kept.count)
    vector.initialize(from: kept, count: kept.count)
    var pointer: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = vector
    return runFuzzerDriver(&count, &pointer, fuzzOneInput)
}
#else
@main
struct FuzzMain {
    static func main() throws {
        let (rest, name) = FuzzTool.takeTarget(Array(CommandLine.arguments.dropFirst()))
        if try FuzzTool.run(rest, target: name) { return }
        guard !rest.isEmpty else {
            print("usage: ArcusFuzz list | ArcusFuzz seed DIR [--target NAME] | ArcusFuzz --target NAME FILE…")
            return
        }
        try FuzzTool.replay(rest, target: name)
    }
}
#endif
