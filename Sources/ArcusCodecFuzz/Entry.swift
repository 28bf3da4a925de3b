#if FUZZING
/// libFuzzer's entry point (Tools/fuzz.sh builds this with -sanitize=fuzzer -DFUZZING).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let data else { return 0 }
    FuzzTarget.run(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// SwiftPM links executables through this renamed entry point, so libFuzzer's own `main` is
/// never used: hand over to its driver here.
@_cdecl("ArcusCodecFuzz_main")
public func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    var count = argc
    var vector = argv
    return runFuzzerDriver(&count, &vector, fuzzOneInput)
}
#else
import Foundation

/// Without libFuzzer: `ArcusCodecFuzz seed DIR` writes a seed corpus of valid frames;
/// `ArcusCodecFuzz FILE…` replays inputs (a crash file from a fuzz run, say).
@main
struct FuzzTool {
    static func main() throws {
        let arguments = CommandLine.arguments.dropFirst()
        if arguments.first == "seed", let directory = arguments.dropFirst().first {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            for (i, frame) in SeedCorpus.frames().enumerated() {
                guard FileManager.default.createFile(atPath: "\(directory)/seed-\(i)", contents: Data(frame)) else {
                    throw CocoaError(.fileWriteUnknown)
                }
            }
            print("wrote \(SeedCorpus.frames().count) seed inputs to \(directory)")
            return
        }
        guard !arguments.isEmpty else {
            print("usage: ArcusCodecFuzz seed DIR | ArcusCodecFuzz FILE...")
            return
        }
        for path in arguments {
            guard let data = FileManager.default.contents(atPath: path) else {
                print("\(path): cannot read")
                continue
            }
            FuzzTarget.run(Array(data))
            print("\(path): no finding")
        }
    }
}
#endif
