package tenantwire.neo4j;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.io.ByteUnit;

/**
 * Runs one embedded Neo4j Community server for the adapter's tests: Bolt on
 * 127.0.0.1:PORT only, auth disabled (loopback test server), everything
 * stored under DATA_DIR. Prints "neo4j: ready" once Bolt accepts
 * connections and shuts down cleanly on SIGTERM.
 */
public final class Launcher {
    private Launcher() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: Launcher PORT DATA_DIR");
            System.exit(2);
        }
        int port = Integer.parseInt(args[0]);
        Path home = Path.of(args[1]).toAbsolutePath();
        Files.createDirectories(home);

        DatabaseManagementService dbms = new DatabaseManagementServiceBuilder(home)
                .setConfig(BoltConnector.enabled, true)
                .setConfig(BoltConnector.listen_address, new SocketAddress("127.0.0.1", port))
                .setConfig(BoltConnector.advertised_address, new SocketAddress("127.0.0.1", port))
                .setConfig(HttpConnector.enabled, false)
                .setConfig(GraphDatabaseSettings.auth_enabled, false)
                // Small and quick: a test server on a shared machine.
                .setConfig(GraphDatabaseSettings.pagecache_memory, ByteUnit.mebiBytes(64))
                .setConfig(GraphDatabaseSettings.shutdown_transaction_end_timeout, Duration.ofSeconds(2))
                .build();

        Runtime.getRuntime().addShutdownHook(new Thread(dbms::shutdown, "neo4j-shutdown"));
        // Fail fast if the default database did not come up.
        dbms.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME).executeTransactionally("RETURN 1");
        System.out.println("neo4j: ready on bolt://127.0.0.1:" + port + " (data " + home + ")");
        System.out.flush();
        Thread.currentThread().join();
    }
}
