// HTTPS between the transport and the server, with certificates made by the openssl CLI
// for this run only.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "http/transport.h"
#include "integration/http/loopback.h"

namespace eslease::http {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

class HttpTls : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("eslease-http-tls-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    // A CA, a server certificate for IP 127.0.0.1 and a client certificate, all signed by the CA.
    const std::string script = "set -e; cd '" + dir_.string() + "'\n" + R"(
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
key ca.key; key server.key; key client.key
openssl req -x509 -new -key ca.key -out ca.crt -days 2 -subj "/CN=eslease test CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
openssl req -new -key server.key -out server.csr -subj "/CN=127.0.0.1"
printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' > server.ext
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 2 -extfile server.ext 2>/dev/null
openssl req -new -key client.key -out client.csr -subj "/CN=eslease-controller"
printf 'extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n' > client.ext
openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out client.crt -days 2 -extfile client.ext 2>/dev/null
)";
    std::ofstream(dir_ / "generate.sh") << script;
    generated_ = std::system(("bash '" + (dir_ / "generate.sh").string() + "'").c_str()) == 0;
  }
  static void TearDownTestSuite() {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  void SetUp() override { ASSERT_TRUE(generated_) << "openssl could not generate test certificates"; }

  static std::string path(const char* name) { return (dir_ / name).string(); }

  std::unique_ptr<Server> start_tls_server(bool require_client_cert = false) {
    ServerOptions options;
    options.tls_cert_file = path("server.crt");
    options.tls_key_file = path("server.key");
    if (require_client_cert) options.tls_client_ca_file = path("ca.crt");
    return start_server(
        [](const ServerRequest& request, ServerResponse& response) {
          response.send(200, {{"Content-Type", "text/plain"}}, "secure " + request.path);
        },
        options);
  }

  static Result<Response> get(const Server& server, TlsOptions tls) {
    auto transport = make_transport({.tls = std::move(tls)});
    return transport->send({.url = url_for(server, "/hello", "https"), .timeout = std::chrono::seconds(10)});
  }

  static inline fs::path dir_;
  static inline bool generated_ = false;
};

TEST_F(HttpTls, VerifiedWithCaFile) {
  auto server = start_tls_server();
  auto response = get(*server, {.ca_file = path("ca.crt")});
  ASSERT_TRUE(response.ok()) << response.error().describe();
  EXPECT_EQ(response->body, "secure /hello");
}

TEST_F(HttpTls, VerifiedWithCaPem) {
  auto server = start_tls_server();
  auto response = get(*server, {.ca_pem = read_file(path("ca.crt"))});
  ASSERT_TRUE(response.ok()) << response.error().describe();
  EXPECT_EQ(response->body, "secure /hello");
}

TEST_F(HttpTls, UntrustedServerIsRejectedClearly) {
  auto server = start_tls_server();
  auto response = get(*server, {});
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(response.error().message.find("TLS handshake failed"), std::string::npos)
      << response.error().describe();
}

TEST_F(HttpTls, VerificationOffAcceptsAnyCertificate) {
  auto server = start_tls_server();
  auto response = get(*server, {.verify = false});
  ASSERT_TRUE(response.ok()) << response.error().describe();
  EXPECT_EQ(response->body, "secure /hello");
}

TEST_F(HttpTls, ClientCertificateFromFiles) {
  auto server = start_tls_server(/*require_client_cert=*/true);
  auto response = get(*server, {.ca_file = path("ca.crt"),
                                .client_cert_file = path("client.crt"),
                                .client_key_file = path("client.key")});
  ASSERT_TRUE(response.ok()) << response.error().describe();
  EXPECT_EQ(response->status, 200);
}

TEST_F(HttpTls, ClientCertificateFromPem) {
  auto server = start_tls_server(/*require_client_cert=*/true);
  auto response = get(*server, {.ca_pem = read_file(path("ca.crt")),
                                .client_cert_pem = read_file(path("client.crt")),
                                .client_key_pem = read_file(path("client.key"))});
  ASSERT_TRUE(response.ok()) << response.error().describe();
  EXPECT_EQ(response->status, 200);
}

TEST_F(HttpTls, ServerRequiringClientCertificateRejectsAnonymousClients) {
  auto server = start_tls_server(/*require_client_cert=*/true);
  auto response = get(*server, {.ca_file = path("ca.crt")});
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().code, ErrorCode::kUnavailable) << response.error().describe();
}

TEST_F(HttpTls, StreamOverTlsDeliversChunksAndCancels) {
  ServerOptions options;
  options.tls_cert_file = path("server.crt");
  options.tls_key_file = path("server.key");
  Flag handler_saw_close;
  auto server = start_server(
      [&](const ServerRequest&, ServerResponse& response) {
        response.begin_chunked(200, {{"Content-Type", "application/json"}});
        response.write_chunk("{\"type\":\"ADDED\"}\n");
        testing::wait_until([&] { return response.closing(); }, std::chrono::seconds(30));
        if (response.closing()) handler_saw_close.set();
      },
      options);
  auto transport = make_transport({.tls = {.ca_file = path("ca.crt")}});
  std::stop_source stop;
  std::string received;
  auto result = transport->stream(
      {.url = url_for(*server, "/watch", "https"), .timeout = std::chrono::minutes(5)},
      [&](std::string_view chunk) {
        received += chunk;
        stop.request_stop();  // cancel while the server is silent
        return true;
      },
      stop.get_token());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kCancelled) << result.error().describe();
  EXPECT_EQ(received, "{\"type\":\"ADDED\"}\n");
  EXPECT_TRUE(handler_saw_close.wait());
}

TEST_F(HttpTls, BadTlsMaterialIsInvalidArgument) {
  auto server = start_tls_server();
  auto missing_ca = get(*server, {.ca_file = path("does-not-exist.crt")});
  ASSERT_FALSE(missing_ca.ok());
  EXPECT_EQ(missing_ca.error().code, ErrorCode::kInvalidArgument) << missing_ca.error().describe();

  auto garbage_pem =
      get(*server, {.ca_pem = "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n"});
  ASSERT_FALSE(garbage_pem.ok());
  EXPECT_EQ(garbage_pem.error().code, ErrorCode::kInvalidArgument) << garbage_pem.error().describe();

  auto cert_without_key = get(*server, {.ca_file = path("ca.crt"), .client_cert_file = path("client.crt")});
  ASSERT_FALSE(cert_without_key.ok());
  EXPECT_EQ(cert_without_key.error().code, ErrorCode::kInvalidArgument)
      << cert_without_key.error().describe();
}

}  // namespace
}  // namespace eslease::http
