// Starts Amazon DynamoDB Local bound to 127.0.0.1 only.
//
// `java -jar DynamoDBLocal.jar` listens on every interface and has no bind-address flag. This
// launcher builds the same server from the same command-line flags, then sets the host of each
// Jetty connector to the loopback address before starting it. Run it in Java's single-file
// source mode, so no build step is needed:
//
//   java -Djava.library.path=<home>/DynamoDBLocal_lib \
//        -cp "<home>/DynamoDBLocal.jar:<home>/DynamoDBLocal_lib/*" \
//        DynamoDbLocalLauncher.java -inMemory -sharedDb -disableTelemetry -port <port>
//
// With `-Dlauncher.portFile=<path>`, the launcher ignores `-port` (DynamoDB Local's flag parser
// refuses 0), lets the kernel pick a free loopback port, and writes that port to <path> once the
// server listens: no race between choosing a port and binding it.

import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

import software.amazon.dynamodb.services.local.main.ServerRunner;
import software.amazon.dynamodb.services.local.server.DynamoDBProxyServer;

public class DynamoDbLocalLauncher {
    public static void main(String[] args) throws Exception {
        DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
        Field field = DynamoDBProxyServer.class.getDeclaredField("server");
        field.setAccessible(true);
        Server server = (Server) field.get(proxy);
        String portFile = System.getProperty("launcher.portFile");
        ServerConnector bound = null;
        for (Connector connector : server.getConnectors()) {
            if (connector instanceof ServerConnector) {
                ServerConnector sc = (ServerConnector) connector;
                sc.setHost("127.0.0.1");
                if (portFile != null) {
                    sc.setPort(0);
                }
                bound = sc;
            }
        }
        if (bound == null || server.getConnectors().length != 1) {
            System.err.println("DynamoDbLocalLauncher: expected exactly one Jetty connector to bind to 127.0.0.1; refusing to start");
            System.exit(2);
        }
        proxy.start();
        int port = bound.getLocalPort();
        System.out.println("DynamoDbLocalLauncher: listening on 127.0.0.1:" + port);
        if (portFile != null) {
            Path target = Path.of(portFile);
            Path tmp = Path.of(portFile + ".tmp");
            Files.writeString(tmp, Integer.toString(port), StandardCharsets.US_ASCII);
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
        }
        proxy.join();
    }
}
