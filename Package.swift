// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Arcus",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "arcus", targets: ["arcus"]),
        .library(name: "ArcusCRDT", targets: ["ArcusCRDT"]),
        .library(name: "ArcusCodec", targets: ["ArcusCodec"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        // The document model and its merge rules. Imports nothing of Arcus.
        .target(name: "ArcusCRDT"),
        // The binary encoding of values, deltas and sync messages.
        .target(name: "ArcusCodec", dependencies: ["ArcusCRDT"]),
        // Durable storage, collections, DQL, transactions, observers, attachments.
        .target(name: "ArcusStore", dependencies: ["ArcusCRDT"]),
        // Composition of every part; for now the benchmark runners.
        .target(name: "ArcusAgent", dependencies: ["ArcusCRDT", "ArcusCodec"]),
        .executableTarget(
            name: "arcus",
            dependencies: [
                "ArcusAgent",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // libFuzzer entry point for the codec's decoders (Tools/fuzz.sh builds it with
        // -sanitize=fuzzer); a plain build gives a tool that replays crash files.
        .executableTarget(name: "ArcusCodecFuzz", dependencies: ["ArcusCodec", "ArcusCRDT"]),
        .testTarget(name: "ArcusCRDTTests", dependencies: ["ArcusCRDT"]),
        .testTarget(name: "ArcusCodecTests", dependencies: ["ArcusCodec", "ArcusCRDT"]),
        .testTarget(name: "ArcusStoreTests", dependencies: ["ArcusStore", "ArcusCRDT"]),
        .testTarget(name: "ArcusAgentTests", dependencies: ["ArcusAgent", "ArcusCodec", "ArcusCRDT"]),
    ],
    swiftLanguageModes: [.v6]
)
