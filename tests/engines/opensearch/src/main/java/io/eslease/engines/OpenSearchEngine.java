package io.eslease.engines;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.opensearch.Build;
import org.opensearch.Version;
import org.opensearch.common.settings.Settings;
import org.opensearch.common.unit.TimeValue;
import org.opensearch.env.Environment;
import org.opensearch.http.HttpServerTransport;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.plugins.Plugin;
import org.opensearch.plugins.PluginInfo;
import sun.misc.Signal;

/**
 * A single-node OpenSearch in this JVM, for eslease's tests and benchmarks.
 *
 * <p>Usage: {@code OpenSearchEngine [--listen HOST:PORT] [--data DIR]}. It serves HTTP on HOST
 * (127.0.0.1 by default) and PORT (0 = any free port), prints {@code opensearch listening on
 * http://HOST:PORT} once it answers, keeps its data in DIR (default: a temporary directory,
 * removed on exit) and stops cleanly, exit 0, on SIGTERM or SIGINT.
 *
 * <p>The node is the server's own {@link Node}, as the distribution runs it, with the netty4
 * transport (HTTP and node-to-node) loaded from the class path instead of a plugins folder:
 * the distribution's launcher (its bootstrap checks, the security manager of 2.x) is what is
 * left out, which changes nothing in how requests are served.
 */
public final class OpenSearchEngine {
  private OpenSearchEngine() {}

  /** The server's node, with plugins taken from the class path. */
  private static final class ClasspathNode extends Node {
    // The collection holds plugin classes (2.x) or descriptions of them (3.x); see plugins().
    @SuppressWarnings({"unchecked", "rawtypes"})
    ClasspathNode(Environment environment, Collection plugins) {
      super(environment, plugins, true);
    }
  }

  public static void main(String[] args) throws Exception {
    String host = "127.0.0.1";
    String port = "0";
    Path data = null;
    for (int i = 0; i < args.length; i++) {
      String arg = args[i];
      if (i + 1 >= args.length) usage("missing value after " + arg);
      String value = args[++i];
      switch (arg) {
        case "--listen" -> {
          int colon = value.lastIndexOf(':');
          if (colon <= 0 || colon == value.length() - 1) usage("--listen wants HOST:PORT, got " + value);
          host = value.substring(0, colon);
          port = value.substring(colon + 1);
          if (!port.chars().allMatch(Character::isDigit)) usage("--listen wants a numeric port, got " + value);
        }
        case "--data" -> data = Paths.get(value).toAbsolutePath();
        default -> usage("unknown argument " + arg);
      }
    }

    Path home = Files.createTempDirectory("eslease-opensearch-");
    boolean ownData = data == null;
    if (ownData) data = home.resolve("data");
    Files.createDirectories(data);
    Files.createDirectories(home.resolve("config"));
    Files.createDirectories(home.resolve("logs"));

    Settings settings = Settings.builder()
        .put("cluster.name", "eslease-test")
        .put("node.name", "eslease-test-node")
        .put("path.home", home.toString())
        .put("path.data", data.toString())
        .put("path.logs", home.resolve("logs").toString())
        .put("discovery.type", "single-node")
        .put("network.host", host)
        .put("http.port", port)
        .put("transport.port", "0")
        // A test machine's disk may be fuller than the default watermarks allow; a node that
        // refuses to allocate its shards would fail every test for a reason not our own.
        .put("cluster.routing.allocation.disk.threshold_enabled", false)
        .build();
    Environment environment =
        InternalSettingsPreparer.prepareEnvironment(settings, Collections.emptyMap(), null, () -> "eslease-test-node");

    System.err.printf("opensearch %s (%s, Lucene %s) on Java %s, data in %s%n", Version.CURRENT,
        Build.CURRENT.getDistribution(), Version.CURRENT.luceneVersion, Runtime.version(), data);

    Node node = new ClasspathNode(environment, plugins());
    CountDownLatch stopRequested = new CountDownLatch(1);
    Signal.handle(new Signal("TERM"), signal -> stopRequested.countDown());
    Signal.handle(new Signal("INT"), signal -> stopRequested.countDown());
    try {
      node.start();
      // Announced once every primary shard of the indices it kept (--data) is active: a
      // client's first request then finds them, as it would on a node that has been running.
      var health = node.client().admin().cluster().prepareHealth()
          .setWaitForYellowStatus().setTimeout(TimeValue.timeValueSeconds(60)).get();
      if (health.isTimedOut()) System.err.println("opensearch: shards not active after 60 s: " + health.getStatus());
      var address = node.injector().getInstance(HttpServerTransport.class).boundAddress().publishAddress();
      String url = String.format("http://%s:%d", host.contains(":") ? "[" + host + "]" : host, address.getPort());
      warmUp(url);
      System.out.println("opensearch listening on " + url);
      System.out.flush();
      stopRequested.await();
      System.err.println("opensearch stopping");
    } finally {
      node.close();
      if (!node.awaitClose(30, TimeUnit.SECONDS)) System.err.println("opensearch did not stop within 30s");
      deleteTree(home);  // a --data DIR lies outside it and stays
    }
    System.err.println("opensearch stopped");
    System.exit(0);
  }

  /**
   * Creates an index, writes, reads and deletes in it over HTTP, and removes it: the first
   * index creation of a fresh JVM takes seconds longer than later ones (classes loaded, code
   * not yet compiled), and a client's first request should not pay for that.
   */
  private static void warmUp(String url) {
    HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    String index = url + "/eslease-engine-warm-up";
    String[][] steps = {
      {"PUT", index, "{\"settings\":{\"number_of_shards\":1},\"mappings\":{\"dynamic\":\"strict\","
          + "\"properties\":{\"n\":{\"type\":\"long\"}}}}"},
      {"PUT", index + "/_create/a%2Fb", "{\"n\":1}"},
      {"PUT", index + "/_doc/a%2Fb?if_seq_no=0&if_primary_term=1", "{\"n\":2}"},
      {"POST", index + "/_bulk", "{\"create\":{\"_id\":\"c\"}}\n{\"n\":3}\n{\"delete\":{\"_id\":\"c\"}}\n"},
      {"POST", index + "/_mget", "{\"ids\":[\"a/b\",\"c\"]}"},
      {"DELETE", index, null},
    };
    for (String[] step : steps) {
      HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(step[1])).timeout(Duration.ofSeconds(120));
      request.method(step[0], step[2] == null ? HttpRequest.BodyPublishers.noBody()
          : HttpRequest.BodyPublishers.ofString(step[2]));
      request.header("Content-Type", step[1].endsWith("_bulk") ? "application/x-ndjson" : "application/json");
      try {
        HttpResponse<String> answer = client.send(request.build(), HttpResponse.BodyHandlers.ofString());
        if (answer.statusCode() >= 300) {
          System.err.println("opensearch warm-up: " + step[0] + " " + step[1] + " answered " + answer.statusCode());
        }
      } catch (IOException e) {
        System.err.println("opensearch warm-up: " + step[0] + " " + step[1] + " failed: " + e.getMessage());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  /** The netty4 transport, in the form this server version's Node takes class-path plugins. */
  private static List<?> plugins() throws ReflectiveOperationException {
    Class<? extends Plugin> netty = nettyPlugin();
    Type taken = Node.class
        .getDeclaredConstructor(Environment.class, Collection.class, boolean.class)
        .getGenericParameterTypes()[1];
    Type element = ((ParameterizedType) taken).getActualTypeArguments()[0];
    if (element == PluginInfo.class) {
      return List.of(new PluginInfo("transport-netty4", "classpath plugin", "NA", Version.CURRENT, "21",
          netty.getName(), Collections.emptyList(), false));
    }
    return List.of(netty);
  }

  /** The netty4 module's plugin class: Netty4Plugin in 2.x, Netty4ModulePlugin in later 3.x. */
  private static Class<? extends Plugin> nettyPlugin() throws ClassNotFoundException {
    for (String name : List.of("org.opensearch.transport.Netty4ModulePlugin", "org.opensearch.transport.Netty4Plugin")) {
      try {
        return Class.forName(name).asSubclass(Plugin.class);
      } catch (ClassNotFoundException e) {
        // the other name, then
      }
    }
    throw new ClassNotFoundException("no netty4 transport plugin on the class path");
  }

  private static void deleteTree(Path root) {
    if (!Files.exists(root)) return;
    try (Stream<Path> paths = Files.walk(root)) {
      paths.sorted(Comparator.reverseOrder()).forEach(path -> {
        try {
          Files.delete(path);
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      });
    } catch (IOException | UncheckedIOException e) {
      System.err.println("opensearch could not remove " + root + ": " + e.getMessage());
    }
  }

  private static void usage(String problem) {
    System.err.println("opensearch engine: " + problem);
    System.err.println("usage: run.sh [--version 2|3] [--listen HOST:PORT] [--data DIR]");
    System.exit(2);
  }
}
