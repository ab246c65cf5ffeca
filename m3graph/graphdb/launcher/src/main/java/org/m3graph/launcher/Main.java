package org.m3graph.launcher;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.BoltConnectorInternalSettings;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;

/**
 * Runs Neo4j Community embedded with only the Bolt connector, so m3graph needs no Docker and no server tarball.
 *
 * <p>The Python side ({@code m3graph db start}) owns the process: it passes the home directory and the Bolt
 * address, waits for the {@code ready} file, and stops the server with SIGTERM, which runs the shutdown hook
 * and closes the store cleanly.
 */
public final class Main {
    private Main() {}

    public static void main(String[] args) throws Exception {
        Options options = Options.parse(args);
        Files.createDirectories(options.home);
        Path ready = options.home.resolve("ready");
        Files.deleteIfExists(ready);

        DatabaseManagementServiceBuilder builder = new DatabaseManagementServiceBuilder(options.home)
                .setConfig(BoltConnector.enabled, true)
                .setConfig(BoltConnector.listen_address, new SocketAddress(options.host, options.port))
                .setConfig(BoltConnector.advertised_address, new SocketAddress(options.host, options.port))
                .setConfig(BoltConnector.encryption_level, BoltConnector.EncryptionLevel.DISABLED)
                // Without these, stopping waits out two 5-second Bolt shutdown timeouts after the store is closed.
                .setConfig(BoltConnectorInternalSettings.connection_shutdown_wait_time, Duration.ofMillis(500))
                .setConfig(BoltConnectorInternalSettings.thread_pool_shutdown_wait_time, Duration.ofMillis(500))
                .setConfig(GraphDatabaseSettings.auth_enabled, false)
                .setConfig(GraphDatabaseSettings.pagecache_memory, options.pageCacheBytes)
                .setConfig(GraphDatabaseSettings.transaction_timeout, Duration.ofSeconds(options.txTimeoutSeconds));
        if (options.plugins != null && Files.isDirectory(options.plugins)) {
            builder.setConfig(GraphDatabaseSettings.plugin_dir, options.plugins.toAbsolutePath())
                    .setConfig(GraphDatabaseSettings.procedure_unrestricted, List.of("apoc.*"));
        }
        DatabaseManagementService service = builder.build();
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            service.shutdown();
            stopped.countDown();
        }, "m3graph-shutdown"));

        GraphDatabaseService db = service.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
        while (!db.isAvailable(1000)) {
            System.out.println("waiting for database to become available");
        }
        String line = "bolt://" + options.host + ":" + options.port + " pid=" + ProcessHandle.current().pid();
        Files.writeString(ready, line + "\n", StandardCharsets.UTF_8);
        System.out.println("ready " + line);
        System.out.flush();
        stopped.await();
    }

    /** Command-line options; deliberately tiny so the Python side stays the single source of configuration. */
    static final class Options {
        Path home;
        Path plugins;
        String host = "127.0.0.1";
        int port = 7687;
        long pageCacheBytes = 2L << 30;
        long txTimeoutSeconds = 600;

        static Options parse(String[] args) throws IOException {
            Options o = new Options();
            for (int i = 0; i < args.length; i++) {
                String value = i + 1 < args.length ? args[i + 1] : null;
                switch (args[i]) {
                    case "--home" -> { o.home = Path.of(require(args[i], value)); i++; }
                    case "--plugins" -> { o.plugins = Path.of(require(args[i], value)); i++; }
                    case "--host" -> { o.host = require(args[i], value); i++; }
                    case "--port" -> { o.port = Integer.parseInt(require(args[i], value)); i++; }
                    case "--pagecache-mb" -> { o.pageCacheBytes = Long.parseLong(require(args[i], value)) << 20; i++; }
                    case "--tx-timeout-s" -> { o.txTimeoutSeconds = Long.parseLong(require(args[i], value)); i++; }
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
