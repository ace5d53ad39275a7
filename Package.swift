// swift-tools-version: 6.2
import PackageDescription

/// Settings every Latchkey target shares: Swift 6 mode (complete strict concurrency), the
/// upcoming features the project's conventions ask for, and no warnings (a warning fails the
/// build; SwiftPM leaves this out when Latchkey is built as someone else's dependency).
let strictSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .treatAllWarnings(as: .error),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

/// The one lock type of the package, for every piece of state tasks and threads share:
/// `NIOLockedValueBox`, a `pthread_mutex_t`, which the thread sanitizer sees (the futex of
/// `Synchronization.Mutex` it does not, and every report near one had to be suppressed).
let lock: Target.Dependency = .product(name: "NIOConcurrencyHelpers", package: "swift-nio")

/// How the quick `latchkey` is linked in a Linux release build: one static program (glibc,
/// SQLite and the Swift libraries inside), so that no dynamic loader runs at its start — it ran
/// more than a third of every `latchkey token` (2.6 ms static against 4.3 ms, 11 against 17 MiB).
/// lld, because it links a static program without the GNU linkers' notes about glibc's user
/// database functions, which the quick binary never reaches (it hands over when no home is in
/// the environment). `LATCHKEY_QUICK_LINK=dynamic` links it as before, for a system without
/// the static archives of SQLite and libstdc++ (Fedora without sqlite-static and
/// libstdc++-static; Debian's -dev packages carry them).
let quickLinking: [String] =
    Context.environment["LATCHKEY_QUICK_LINK"] == "dynamic"
    ? ["-static-stdlib"] : ["-static-executable", "-use-ld=lld"]

/// Products several targets depend on.
let crypto: Target.Dependency = .product(name: "Crypto", package: "swift-crypto")
let logging: Target.Dependency = .product(name: "Logging", package: "swift-log")
let httpTypes: Target.Dependency = .product(name: "HTTPTypes", package: "swift-http-types")
let nioCore: Target.Dependency = .product(name: "NIOCore", package: "swift-nio")
let nioPosix: Target.Dependency = .product(name: "NIOPosix", package: "swift-nio")
let nioHTTP1: Target.Dependency = .product(name: "NIOHTTP1", package: "swift-nio")
let asyncHTTPClient: Target.Dependency = .product(name: "AsyncHTTPClient", package: "async-http-client")
let postgresNIO: Target.Dependency = .product(name: "PostgresNIO", package: "postgres-nio")
let systemPackage: Target.Dependency = .product(name: "SystemPackage", package: "swift-system")
let serviceLifecycle: Target.Dependency = .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
let jwtKit: Target.Dependency = .product(name: "JWTKit", package: "jwt-kit")
let hummingbird: Target.Dependency = .product(name: "Hummingbird", package: "hummingbird")

let package = Package(
    name: "Latchkey",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11)],
    products: [
        .library(name: "Latchkey", targets: ["Latchkey"]),
        .library(name: "LatchkeySQLite", targets: ["LatchkeySQLite"]),
        .library(name: "LatchkeyPostgres", targets: ["LatchkeyPostgres"]),
        .library(name: "LatchkeyHTTP", targets: ["LatchkeyHTTP"]),
        .library(name: "LatchkeyURLRequest", targets: ["LatchkeyURLRequest"]),
        .library(name: "LatchkeyMCP", targets: ["LatchkeyMCP"]),
        .library(name: "LatchkeyAgent", targets: ["LatchkeyAgent"]),
        .library(name: "LatchkeyDevProvider", targets: ["LatchkeyDevProvider"]),
        .library(name: "LatchkeyHummingbird", targets: ["LatchkeyHummingbird"]),
        .library(name: "LatchkeyStorageTesting", targets: ["LatchkeyStorageTesting"]),
        .executable(name: "latchkey", targets: ["latchkey"]),
        .executable(name: "latchkey-full", targets: ["latchkey-full"]),
        .executable(name: "latchkey-bench", targets: ["latchkey-bench"]),
        .executable(name: "latchkey-web-example", targets: ["latchkey-web-example"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.0.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.0"),
        // Tests only: child processes without Foundation's Process.
        .package(url: "https://github.com/swiftlang/swift-subprocess.git", from: "1.0.2"),
        // File descriptors, stat and errno for the SQLite store's files.
        .package(url: "https://github.com/apple/swift-system.git", from: "1.7.0"),
        // The fleet store.
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.0"),
        // Tests only: the Kubernetes API stand-in serves TLS (client-go sends exec credentials only over TLS).
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.36.0"),
        // Metrics and spans for servers (the application bootstraps the backends).
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.0"),
    ],
    targets: [
        // What Latchkey keeps and how it is sealed: tokens, credentials, the seal and its key.
        // Foundation Essentials, swift-crypto and swift-system only, so that a program that only
        // reads a stored token (the tool's quick commands) loads nothing else. `Latchkey`
        // re-exports it.
        .target(
            name: "LatchkeyRecords",
            dependencies: [crypto, systemPackage],
            swiftSettings: strictSettings
        ),
        .target(
            name: "Latchkey",
            dependencies: [
                "LatchkeyRecords", crypto, logging, httpTypes,
                .product(
                    name: "HTTPTypesFoundation", package: "swift-http-types",
                    condition: .when(platforms: [.macOS, .iOS, .tvOS, .watchOS, .visionOS])),
                jwtKit, serviceLifecycle,
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                lock,
            ],
            swiftSettings: strictSettings
        ),
        // SQLite's C API alone, for what must not wait for a thread hop or load GRDB: the store's
        // change counter, and the tool's quick reads.
        .target(
            name: "LatchkeySQLiteReader",
            dependencies: [
                "LatchkeyRecords",
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                crypto, systemPackage, lock,
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "LatchkeySQLite",
            dependencies: [
                "Latchkey", "LatchkeySQLiteReader",
                .product(name: "GRDB", package: "GRDB.swift"),
                systemPackage, crypto, logging, lock,
            ],
            swiftSettings: strictSettings
        ),
        // The fleet store: many server instances share credentials, one refresh lease per
        // credential, an outbox they drain together and change events between them.
        .target(
            name: "LatchkeyPostgres",
            dependencies: [
                "Latchkey", lock,
                postgresNIO, crypto, logging,
            ],
            swiftSettings: strictSettings
        ),
        // The storage contract, shipped so that any backend (Latchkey's or a user's) proves itself.
        .target(
            name: "LatchkeyStorageTesting",
            dependencies: ["Latchkey", lock],
            swiftSettings: strictSettings
        ),
        .target(
            name: "LatchkeyHTTP",
            dependencies: [
                "Latchkey", asyncHTTPClient, httpTypes, nioCore, nioPosix, nioHTTP1, logging, lock,
            ],
            swiftSettings: strictSettings
        ),
        // An MCP stdio server that forwards to a remote MCP server with an account's token
        // (`latchkey mcp-proxy`).
        .target(
            name: "LatchkeyMCP",
            dependencies: [
                "Latchkey", "LatchkeyHTTP",
                httpTypes, nioCore, nioPosix, logging,
            ],
            swiftSettings: strictSettings
        ),
        // `latchkey agent`: a unix socket that hands out access tokens and DPoP proofs within
        // its limits, and its client (remote hosts reach it through `ssh -R`).
        .target(
            name: "LatchkeyAgent",
            dependencies: ["LatchkeyRecords", nioCore, nioPosix, logging, lock],
            swiftSettings: strictSettings
        ),
        // `URLRequest` support: on Linux it needs FoundationNetworking (libcurl and what it
        // links), which programs that do not use URLRequest should not load.
        .target(
            name: "LatchkeyURLRequest",
            dependencies: ["Latchkey", httpTypes],
            swiftSettings: strictSettings
        ),
        // Sign-in sessions and back-channel logout for Hummingbird 2 web apps.
        .target(
            name: "LatchkeyHummingbird",
            dependencies: [
                "Latchkey", hummingbird, logging, serviceLifecycle, nioCore,
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "LatchkeyDevProvider",
            dependencies: [
                hummingbird,
                // Back-channel logout tokens are POSTed to the clients.
                asyncHTTPClient, nioHTTP1, serviceLifecycle,
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                jwtKit, crypto,
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                logging, lock,
            ],
            swiftSettings: strictSettings
        ),
        // What both halves of the tool agree on: where the home, its store and its key are, the
        // provider list, and how a token is printed for people, scripts, git and kubectl.
        .target(
            name: "LatchkeyCommandLine",
            dependencies: [
                "LatchkeyRecords", "LatchkeyBuildIdentity", systemPackage,
            ],
            swiftSettings: strictSettings
        ),
        // `latchkey`: the command-line tool as people and programs call it. It answers the
        // commands called many times a minute (`token`, `credential git|kubectl`) from the SQLite
        // store when the token is valid, loading nothing else, and hands every other command to
        // `latchkey-full`, installed beside it (exec, same process). Built with the Swift
        // libraries linked in (Linux, release): a process that starts in a few milliseconds.
        // It names no dependency on `latchkey-full`: SwiftPM would link every library of that
        // into it. Its build plugin has SwiftPM build `latchkey-full` first instead, so that
        // `swift run latchkey demo` works from a fresh clone; nothing is ever built at run time.
        .executableTarget(
            name: "latchkey",
            dependencies: ["LatchkeyRecords", "LatchkeySQLiteReader", "LatchkeyCommandLine"],
            swiftSettings: strictSettings + [
                .unsafeFlags(["-static-stdlib"], .when(platforms: [.linux], configuration: .release))
            ],
            linkerSettings: [.unsafeFlags(quickLinking, .when(platforms: [.linux], configuration: .release))],
            plugins: ["BuildFullToolFirst"]
        ),
        // Builds `latchkey-full` whenever `latchkey` is built (see Plugins/BuildFullToolFirst).
        .plugin(name: "BuildFullToolFirst", capability: .buildTool(), dependencies: ["latchkey-full-built"]),
        .executableTarget(
            name: "latchkey-full-built", dependencies: ["LatchkeyBuildIdentity"], swiftSettings: strictSettings),
        // A program file's build identity (ELF build ID, Mach-O UUID): what the two halves of
        // the tool compare at a handover. No dependencies: the plugin's tool, built for the
        // host, links it.
        .target(name: "LatchkeyBuildIdentity", swiftSettings: strictSettings),
        // Every command of the tool (swift-argument-parser).
        .executableTarget(
            name: "latchkey-full",
            dependencies: [
                "Latchkey", "LatchkeyCommandLine",
                "LatchkeySQLite", "LatchkeyPostgres", "LatchkeyHTTP", "LatchkeyMCP", "LatchkeyAgent",
                "LatchkeyDevProvider",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                postgresNIO, crypto, logging, systemPackage, nioPosix, httpTypes,
                // The desktop keyring through secret-tool; scrypt for a passphrase-sealed key.
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                lock,
            ],
            swiftSettings: strictSettings
        ),
        // The example web app: `swift run latchkey-web-example`.
        .executableTarget(
            name: "latchkey-web-example",
            dependencies: [
                "Latchkey", "LatchkeyHummingbird", "LatchkeyHTTP", "LatchkeyPostgres", "LatchkeyDevProvider",
                hummingbird,
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                postgresNIO, crypto,
            ],
            path: "Examples/WebApp",
            swiftSettings: strictSettings
        ),
        // The benchmark suite: `swift run -c release latchkey-bench`.
        .executableTarget(
            name: "latchkey-bench",
            dependencies: [
                "Latchkey", "LatchkeySQLite", "LatchkeyPostgres", "LatchkeyHTTP", "LatchkeyDevProvider", "LatchkeyMCP",
                httpTypes, "LatchkeyStorageTesting", postgresNIO, crypto, lock,
            ],
            path: "Benchmarks/latchkey-bench",
            swiftSettings: strictSettings
        ),
        // A helper the tests start as a separate process (two writers, SIGKILL rounds).
        .executableTarget(
            name: "latchkey-store-worker",
            dependencies: [
                "Latchkey", "LatchkeySQLite", "LatchkeyHTTP", httpTypes,
                lock,
            ],
            path: "Tests/StoreWorker",
            swiftSettings: strictSettings
        ),
        // An instance of a fleet, started as a separate process by the PostgreSQL store's tests.
        .executableTarget(
            name: "latchkey-fleet-worker",
            dependencies: [
                "Latchkey", "LatchkeyPostgres", "LatchkeySQLite", "LatchkeyHTTP",
                postgresNIO, httpTypes, crypto, lock,
            ],
            path: "Tests/FleetWorker",
            swiftSettings: strictSettings
        ),
        // What several test targets share: child processes, the built executables, signing keys,
        // and the trace pass's log check.
        .target(
            name: "LatchkeyTestSupport",
            dependencies: [
                "Latchkey", "LatchkeyDevProvider",
                // TestBrowser, for the web sign-in tests.
                asyncHTTPClient, nioCore, nioHTTP1, nioPosix, logging, httpTypes,
                .product(name: "Subprocess", package: "swift-subprocess"),
                systemPackage,
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                lock,
            ],
            path: "Tests/TestSupport",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "LatchkeyTests",
            dependencies: [
                "Latchkey", "LatchkeySQLite", "LatchkeyTestSupport", "LatchkeyStorageTesting", "LatchkeySQLiteReader",
                // The agent's limits, decided without a socket.
                "LatchkeyAgent",
                // The schema-upgrade test writes an old store's rows itself.
                .product(name: "GRDB", package: "GRDB.swift"),
                // DPoP proofs are checked with another library's verifier.
                jwtKit, crypto, lock,
            ],
            swiftSettings: strictSettings
        ),
        // The client against the development provider and Glewlwyd, over real HTTP on loopback.
        .testTarget(
            name: "LatchkeyClientTests",
            dependencies: [
                "Latchkey", "LatchkeyHTTP", "LatchkeyDevProvider", "LatchkeySQLite", "LatchkeyTestSupport",
                "LatchkeyURLRequest",
                "LatchkeyHummingbird", hummingbird,
                "LatchkeyStorageTesting", asyncHTTPClient, logging, httpTypes, jwtKit, crypto, serviceLifecycle,
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                lock,
            ],
            swiftSettings: strictSettings
        ),
        // The built `latchkey` binary, run as a user would.
        .testTarget(
            name: "LatchkeyCLITests",
            dependencies: [
                "LatchkeyDevProvider", "LatchkeyTestSupport",
                // The quick path's grammar, checked against the full tool's parser; the build
                // identity both halves compare.
                "LatchkeyCommandLine", "LatchkeyBuildIdentity", asyncHTTPClient,
                // A passphrase-sealed key file as an earlier version wrote it.
                crypto,
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                // The loopback git server and Kubernetes API stand-in of the credential-helper tests;
                // the stand-in verifies ID tokens with Latchkey's verifier.
                hummingbird,
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                "Latchkey", "LatchkeyHTTP",
                lock,
            ],
            swiftSettings: strictSettings
        ),
        // The PostgreSQL store against a real server: the storage contract, its errors, change
        // events, fleets of separate processes, and the command-line tool with --store.
        .testTarget(
            name: "LatchkeyPostgresTests",
            dependencies: [
                "Latchkey", "LatchkeyPostgres", "LatchkeyStorageTesting", "LatchkeyTestSupport", "LatchkeyDevProvider",
                asyncHTTPClient, nioCore, nioHTTP1,
                "LatchkeyHTTP",
                postgresNIO, serviceLifecycle, crypto, logging, lock,
            ],
            swiftSettings: strictSettings
        ),
        // Conformance tests of the development provider, over real HTTP on loopback.
        .testTarget(
            name: "LatchkeyDevProviderTests",
            dependencies: [
                "LatchkeyDevProvider", "LatchkeyTestSupport",
                asyncHTTPClient, jwtKit, crypto, nioPosix, lock,
            ],
            swiftSettings: strictSettings
        ),
    ]
)
