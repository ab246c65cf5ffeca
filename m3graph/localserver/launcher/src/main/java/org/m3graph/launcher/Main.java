package org.m3graph.launcher;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import org.apache.lucene.util.VectorUtil;
import org.neo4j.configuration.Config;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.BoltConnectorInternalSettings;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.graphdb.config.Setting;

/**
 * Runs Neo4j Community embedded with only the Bolt connector, so m3graph needs no Docker and no server tarball.
 *
 * <p>The Python side ({@code m3graph db start}) owns the process: it passes the home directory and the Bolt
 * address, waits for the {@code ready} file, and stops the server with SIGTERM, which runs the shutdown hook
 * and closes the store cleanly (a checkpoint, so the next start needs no recovery).
 *
 * <p>Hardening: auth is on unless {@code --no-auth}; the initial password arrives in a file that is read and
 * deleted before the database starts (never on the command line), and Neo4j stores only its hash. LOAD CSV is
 * confined to {@code --import-dir}; no procedure is unrestricted.
 */
public final class Main {
    private static final String VECTORIZATION_LOGGER = "org.apache.lucene.internal.vectorization";

    private Main() {}

    public static void main(String[] args) throws Exception {
        Options options = Options.parse(args);
        // Captured before anything touches Lucene: its one log line says whether distances use SIMD.
        SimdProbe simd = SimdProbe.install();
        Files.createDirectories(options.home);
        Path ready = options.home.resolve("ready");
        Files.deleteIfExists(ready);
        byte[] password = readAndDelete(options.passwordFile);

        DatabaseManagementServiceBuilder builder = new DatabaseManagementServiceBuilder(options.home)
                .setConfig(BoltConnector.enabled, true)
                .setConfig(BoltConnector.listen_address, new SocketAddress(options.host, options.port))
                .setConfig(BoltConnector.advertised_address, new SocketAddress(options.host, options.port))
                .setConfig(BoltConnector.encryption_level, BoltConnector.EncryptionLevel.DISABLED)
                // Without these, stopping waits out two 5-second Bolt shutdown timeouts after the store is closed.
                .setConfig(BoltConnectorInternalSettings.connection_shutdown_wait_time, Duration.ofMillis(500))
                .setConfig(BoltConnectorInternalSettings.thread_pool_shutdown_wait_time, Duration.ofMillis(500))
                .setConfig(GraphDatabaseSettings.auth_enabled, options.auth)
                .setConfig(GraphDatabaseSettings.pagecache_memory, options.pageCacheBytes)
                .setConfig(GraphDatabaseSettings.transaction_timeout, Duration.ofSeconds(options.txTimeoutSeconds))
                .setConfig(GraphDatabaseSettings.procedure_unrestricted, List.of());
        if (options.importDir != null) {
            Files.createDirectories(options.importDir);
            builder.setConfig(GraphDatabaseSettings.load_csv_file_url_root, options.importDir.toAbsolutePath())
                    .setConfig(GraphDatabaseSettings.allow_file_urls, true);
        } else {
            builder.setConfig(GraphDatabaseSettings.allow_file_urls, false);
        }
        if (options.plugins != null && Files.isDirectory(options.plugins)) {
            builder.setConfig(GraphDatabaseSettings.plugin_dir, options.plugins.toAbsolutePath());
        }
        for (Map.Entry<Setting<Object>, Object> typed : typedSettings(options.settings).entrySet()) {
            builder.setConfig(typed.getKey(), typed.getValue());
        }
        DatabaseManagementService service = builder.build();
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            long began = System.nanoTime();
            System.out.println("shutdown: started (checkpoint and close)");
            System.out.flush();
            service.shutdown();
            System.out.printf("shutdown: done in %.1f s%n", (System.nanoTime() - began) / 1e9);
            System.out.flush();
            stopped.countDown();
        }, "m3graph-shutdown"));

        GraphDatabaseService db = service.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
        while (!db.isAvailable(1000)) {
            System.out.println("waiting for database to become available");
        }
        if (options.auth && password != null) {
            InitialUser.apply(service, options.user, password);
        }
        String simdLine = simd.probe();
        System.out.println("simd: " + simdLine);
        String line = "bolt://" + options.host + ":" + options.port + " pid=" + ProcessHandle.current().pid()
                + " auth=" + options.auth;
        Files.writeString(ready, line + "\nsimd=" + simdLine + "\n", StandardCharsets.UTF_8);
        System.out.println("ready " + line);
        System.out.flush();
        stopped.await();
    }

    private static byte[] readAndDelete(Path file) throws IOException {
        if (file == null) {
            return null;
        }
        byte[] bytes = Files.readAllBytes(file);
        Files.delete(file);
        return bytes;
    }

    /**
     * Resolves {@code name=value} pairs through Neo4j's own setting declarations, so each value is parsed and
     * validated by its typed setting (an unknown name or a bad value stops the start with Neo4j's message).
     */
    static Map<Setting<Object>, Object> typedSettings(Map<String, String> raw) {
        Map<Setting<Object>, Object> typed = new LinkedHashMap<>();
        if (raw.isEmpty()) {
            return typed;
        }
        Config parsed = Config.newBuilder().setRaw(raw).build();
        Map<String, Setting<Object>> declared = parsed.getDeclaredSettings();
        for (String name : raw.keySet()) {
            Setting<Object> setting = declared.get(name);
            if (setting == null) {
                throw new IllegalArgumentException("unknown Neo4j setting " + name + " for this Neo4j version");
            }
            typed.put(setting, parsed.get(setting));
        }
        return typed;
    }

    /** Lucene reports whether it uses the Panama vector API (SIMD) once, through java.util.logging. */
    static final class SimdProbe extends Handler {
        // java.util.logging holds loggers weakly: without this reference the handler could vanish with its logger.
        private static Logger logger;
        private volatile String message;

        static SimdProbe install() {
            SimdProbe probe = new SimdProbe();
            logger = Logger.getLogger(VECTORIZATION_LOGGER);
            logger.setLevel(Level.ALL);
            logger.addHandler(probe);
            return probe;
        }

        String probe() {
            float[] a = {1f, 2f, 3f, 4f, 5f, 6f, 7f, 8f};
            VectorUtil.dotProduct(a, a); // loads Lucene's vectorization provider, which logs its choice
            String seen = message;
            if (seen == null) {
                return "unknown (Lucene logged nothing; vector provider loaded before the probe?)";
            }
            return seen.replace('\n', ' ');
        }

        @Override
        public void publish(LogRecord record) {
            if (record.getMessage() != null && message == null) {
                message = record.getMessage();
            }
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
    }

    /** Sets the initial password once: a store whose user already has a chosen password is left alone. */
    static final class InitialUser {
        private InitialUser() {}

        static void apply(DatabaseManagementService service, String user, byte[] password) {
            GraphDatabaseService system = service.database(GraphDatabaseSettings.SYSTEM_DATABASE_NAME);
            String secret = new String(password, StandardCharsets.UTF_8);
            Map<String, Object> params = Map.of("user", user, "password", secret);
            List<Boolean> changeRequired = new ArrayList<>();
            system.executeTransactionally(
                    "SHOW USERS YIELD user, passwordChangeRequired WHERE user = $user RETURN passwordChangeRequired",
                    Map.of("user", user),
                    result -> {
                        result.forEachRemaining(row -> changeRequired.add((Boolean) row.get("passwordChangeRequired")));
                        return null;
                    });
            if (changeRequired.isEmpty()) {
                system.executeTransactionally(
                        "CREATE USER $user IF NOT EXISTS SET PASSWORD $password CHANGE NOT REQUIRED", params);
                System.out.println("auth: created user " + user + " with the configured initial password");
            } else if (changeRequired.get(0)) {
                system.executeTransactionally("ALTER USER $user SET PASSWORD $password CHANGE NOT REQUIRED", params);
                System.out.println("auth: set the configured initial password for " + user);
            } else {
                System.out.println("auth: " + user + " already has a password; the configured one is not applied");
            }
        }
    }

    /** Command-line options; deliberately small so the Python side stays the single source of configuration. */
    static final class Options {
        Path home;
        Path plugins;
        Path importDir;
        Path passwordFile;
        String host = "127.0.0.1";
        String user = "neo4j";
        int port = 7687;
        boolean auth = true;
        long pageCacheBytes = 2L << 30;
        long txTimeoutSeconds = 600;
        final Map<String, String> settings = new LinkedHashMap<>();

        static Options parse(String[] args) throws IOException {
            Options o = new Options();
            for (int i = 0; i < args.length; i++) {
                String value = i + 1 < args.length ? args[i + 1] : null;
                switch (args[i]) {
                    case "--home" -> { o.home = Path.of(require(args[i], value)); i++; }
                    case "--plugins" -> { o.plugins = Path.of(require(args[i], value)); i++; }
                    case "--import-dir" -> { o.importDir = Path.of(require(args[i], value)); i++; }
                    case "--password-file" -> { o.passwordFile = Path.of(require(args[i], value)); i++; }
                    case "--user" -> { o.user = require(args[i], value); i++; }
                    case "--no-auth" -> o.auth = false;
                    case "--host" -> { o.host = require(args[i], value); i++; }
                    case "--port" -> { o.port = Integer.parseInt(require(args[i], value)); i++; }
                    case "--pagecache-mb" -> { o.pageCacheBytes = Long.parseLong(require(args[i], value)) << 20; i++; }
                    case "--tx-timeout-s" -> { o.txTimeoutSeconds = Long.parseLong(require(args[i], value)); i++; }
                    case "--setting" -> {
                        String pair = require(args[i], value);
                        int eq = pair.indexOf('=');
                        if (eq <= 0) {
                            throw new IllegalArgumentException("--setting needs name=value, got " + pair);
                        }
                        o.settings.put(pair.substring(0, eq), pair.substring(eq + 1));
                        i++;
                    }
                    default -> throw new IllegalArgumentException("unknown option " + args[i]);
                }
            }
            if (o.home == null) {
                throw new IllegalArgumentException("--home DIR is required");
            }
            return o;
        }

        private static String require(String flag, String value) {
            if (value == null) {
                throw new IllegalArgumentException(flag + " needs a value");
            }
            return value;
        }
    }
}
