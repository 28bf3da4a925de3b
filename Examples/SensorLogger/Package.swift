// swift-tools-version:6.0
import PackageDescription

// An app that embeds Arcus: it depends on the `Arcus` library product, nothing else of the package.
let package = Package(
    name: "SensorLogger",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "Arcus", path: "../.."),
    ],
    targets: [
        .executableTarget(name: "sensor-logger", dependencies: [.product(name: "Arcus", package: "Arcus")], path: "Sources/SensorLogger"),
    ],
    swiftLanguageModes: [.v6]
)
