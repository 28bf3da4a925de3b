// swift-tools-version:6.0
import PackageDescription

// Hot paths cross module boundaries (the codec walks CRDT state): let the optimizer inline
// across them in release builds. Exclusivity is still checked statically and in debug builds
// (the tests); release builds skip the dynamic checks on class-boxed CRDT components.
let optimized: [SwiftSetting] = [
    .unsafeFlags(["-cross-module-optimization", "-enforce-exclusivity=unchecked"], .when(configuration: .release))
]

let package = Package(
    name: "Arcus",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "arcus", targets: ["arcus"]),
        // The agent inside an app: `EmbeddedAgent` (Sources/Arcus), with the store and its values.
        .library(name: "Arcus", targets: ["Arcus"]),
        .library(name: "ArcusCRDT", targets: ["ArcusCRDT"]),
        .library(name: "ArcusCodec", targets: ["ArcusCodec"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.0.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.0"),
        // The agent: its HTTP API, its lifecycle, its logs and metrics, and the CLI's client for it.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.100.0"),
        // The agent's configuration file is TOML.
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
    ],
    targets: [
        // The document model and its merge rules. Imports nothing of Arcus.
        .target(name: "ArcusCRDT", exclude: ["README.md"], swiftSettings: optimized),
        // Zstandard, for compressing large frames.
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        // The binary encoding of values, deltas and sync messages.
        .target(name: "ArcusCodec", dependencies: ["ArcusCRDT", "CZstd"], exclude: ["README.md"], swiftSettings: optimized),
        // A SQLite VFS shim that writes a transaction's write-ahead-log frames in one call
        // (see WALWriteGathering in ArcusStore).
        .target(name: "CArcusSQLiteWAL", linkerSettings: [.linkedLibrary("sqlite3")]),
        // Durable storage, collections, DQL, transactions, observers, attachments.
        .target(
            name: "ArcusStore",
            dependencies: [
                "ArcusCRDT", "ArcusCodec", "CArcusSQLiteWAL",
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's C API, for the statements every write runs (see RawStatement).
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: optimized
        ),
        // The replication protocol between two peers: subscriptions, summaries, deltas, acks,
        // attachment chunks. Speaks to a peer through a `SyncChannel`; knows no transport.
        .target(
            name: "ArcusSync",
            dependencies: ["ArcusCRDT", "ArcusCodec", "ArcusStore", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: optimized
        ),
        // Links and the multiplexer: `Link`, fragmentation, sessions per peer, peer identity,
        // the session handshake and encryption (swift-crypto: Curve25519, ChaCha20-Poly1305, HKDF).
        .target(
            name: "ArcusMesh",
            dependencies: ["ArcusCodec", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: optimized
        ),
        // libavahi-client, for LAN discovery over mDNS (through avahi-daemon on the system bus).
        .systemLibrary(name: "CAvahi", pkgConfig: "avahi-client", providers: [.apt(["libavahi-client-dev"])]),
        // BlueZ's headers, for L2CAP LE credit-based channels (sockets only; no libbluetooth calls).
        .systemLibrary(name: "CBlueZ", pkgConfig: "bluez", providers: [.apt(["libbluetooth-dev"])]),
        // Links without radios: in-process pairs that model MTU, bandwidth, latency and drops.
        .target(name: "ArcusLoopback", dependencies: ["ArcusMesh"], swiftSettings: optimized),
        // Links over TCP on the local network, on SwiftNIO: a listener, a dialer, static peers.
        .target(
            name: "ArcusLAN",
            dependencies: [
                "ArcusMesh", "CAvahi",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: optimized
        ),
        // Links over Bluetooth LE L2CAP credit-based channels (BlueZ sockets), and the emulated
        // radio that runs the same socket code over AF_UNIX SOCK_SEQPACKET, for CI.
        .target(name: "ArcusBluetooth", dependencies: ["ArcusMesh", "CBlueZ"], swiftSettings: optimized),
        // libnats, the NATS C client, for the cloud relay.
        .systemLibrary(name: "CNATS", pkgConfig: "libnats", providers: [.apt(["libnats-dev"])]),
        // Links relayed through NATS subjects (JetStream stores frames for peers that are away).
        // swift-crypto: presence announcements are signed with the peer's identity key, link
        // frames authenticated with a key the two peers' identities agree on.
        .target(
            name: "ArcusCloud", dependencies: ["ArcusMesh", "CNATS", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: optimized
        ),
        // Composition of every part: the agent, its HTTP API, its configuration, the CLI's client.
        .target(
            name: "ArcusAgent",
            dependencies: [
                "ArcusCRDT", "ArcusCodec", "ArcusStore", "ArcusSync", "ArcusMesh", "ArcusLoopback", "ArcusLAN", "ArcusBluetooth", "ArcusCloud",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "TOMLKit", package: "TOMLKit"),
            ],
            swiftSettings: optimized
        ),
        // The library an app embeds: `EmbeddedAgent`, the agent without its HTTP API.
        .target(
            name: "Arcus",
            dependencies: [
                "ArcusAgent", "ArcusCRDT", "ArcusStore", "ArcusSync", "ArcusMesh",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The benchmark runners (`arcus bench`) and the field recorder (`arcus field-test`): tools
        // the `arcus` executable links, never part of an app's library.
        .target(
            name: "ArcusBench",
            dependencies: [
                "ArcusAgent", "ArcusCRDT", "ArcusCodec", "ArcusStore", "ArcusSync", "ArcusMesh", "ArcusLoopback", "ArcusLAN", "ArcusBluetooth", "ArcusCloud",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: optimized
        ),
        // The demos (`arcus demo`): meshes on one machine, failover, presence, an attachment's trip.
        .target(
            name: "ArcusDemo",
            dependencies: [
                "ArcusAgent", "ArcusBench", "ArcusCRDT", "ArcusCodec", "ArcusStore", "ArcusSync", "ArcusMesh", "ArcusLoopback", "ArcusBluetooth",
            ],
            swiftSettings: optimized
        ),
        .executableTarget(
            name: "arcus",
            dependencies: [
                "ArcusAgent", "ArcusBench", "ArcusDemo",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // libFuzzer targets for every decoder of untrusted bytes, one chosen by name (Tools/fuzz.sh
        // builds it with -sanitize=fuzzer); a plain build gives a tool that writes seed corpora and
        // replays crash files.
        .executableTarget(
            name: "ArcusFuzz",
            dependencies: [
                "ArcusCodec", "ArcusCRDT", "ArcusStore", "ArcusSync", "ArcusMesh", "ArcusLoopback", "ArcusLAN", "ArcusBluetooth", "ArcusCloud",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // Seeded randomness, random documents and waits, shared by the test targets.
        .target(name: "ArcusTestSupport", dependencies: ["ArcusCRDT"], path: "Tests/ArcusTestSupport"),
        // The library, used as an app uses it.
        .testTarget(
            name: "ArcusTests",
            dependencies: ["Arcus", "ArcusMesh", "ArcusTestSupport", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(name: "ArcusCRDTTests", dependencies: ["ArcusCRDT", "ArcusTestSupport"]),
        .testTarget(name: "ArcusCodecTests", dependencies: ["ArcusCodec", "ArcusCRDT", "ArcusTestSupport"]),
        .testTarget(
            name: "ArcusStoreTests",
            dependencies: ["ArcusStore", "ArcusCRDT", "ArcusCodec", "ArcusTestSupport", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        // The transport and link conformance suites, shared by every transport's test target.
        .target(name: "ArcusTransportConformance", dependencies: ["ArcusMesh"], path: "Tests/ArcusTransportConformance"),
        .testTarget(
            name: "ArcusMeshTests",
            dependencies: [
                "ArcusMesh", "ArcusCodec", "ArcusLoopback", "ArcusTestSupport", "ArcusTransportConformance",
                // To recompute the advertised mesh identifier independently.
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            // Published Noise test vectors (Fixtures/noise/README.md says where each came from).
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "ArcusLANTests",
            dependencies: [
                "ArcusLAN", "ArcusMesh", "ArcusTestSupport", "ArcusTransportConformance", "CAvahi",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "ArcusBluetoothTests",
            dependencies: ["ArcusBluetooth", "ArcusMesh", "ArcusTestSupport", "ArcusTransportConformance"]
        ),
        .testTarget(
            name: "ArcusCloudTests",
            dependencies: ["ArcusCloud", "ArcusMesh", "ArcusTestSupport", "ArcusTransportConformance", "CNATS"]
        ),
        .testTarget(
            name: "ArcusSyncTests",
            dependencies: ["ArcusSync", "ArcusStore", "ArcusCRDT", "ArcusCodec", "ArcusMesh", "ArcusLoopback", "ArcusAgent", "ArcusBench", "ArcusDemo", "ArcusTestSupport"]
        ),
        .testTarget(
            name: "ArcusAgentTests",
            dependencies: [
                "ArcusAgent", "ArcusBench", "ArcusDemo", "ArcusCodec", "ArcusCRDT", "ArcusStore", "ArcusSync", "ArcusLoopback", "ArcusMesh", "ArcusTestSupport",
                "ArcusBluetooth", "ArcusCloud",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                // The hostile page's own server, in the browser attack tests.
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            resources: [.copy("Fixtures")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
