#include "kube/config.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "kube/token_source.h"
#include "support/temp_dir.h"

namespace eslease::kube {
namespace {

namespace fs = std::filesystem;

using testing::TempDir;

std::string kubeconfig(const std::string& cluster, const std::string& user,
                       const std::string& extra_context = "") {
  return "apiVersion: v1\nkind: Config\ncurrent-context: main\nclusters:\n- name: c1\n  cluster:\n" +
         cluster +
         "contexts:\n- name: main\n  context:\n    cluster: c1\n    user: u1\n    namespace: team-a\n" +
         extra_context + "users:\n- name: u1\n  user:\n" + user;
}

TEST(KubeconfigTest, TokenAndCaData) {
  // "-----BEGIN CERTIFICATE-----" base64-encoded.
  auto config =
      parse_kubeconfig(kubeconfig("    server: https://10.0.0.1:6443/\n"
                                  "    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t\n",
                                  "    token: secret-token\n"),
                       "/nowhere");
  ASSERT_TRUE(config.ok()) << config.error().describe();
  EXPECT_EQ(config->server, "https://10.0.0.1:6443");
  EXPECT_EQ(config->tls.ca_pem, "-----BEGIN CERTIFICATE-----");
  EXPECT_TRUE(config->tls.verify);
  EXPECT_EQ(config->token, "secret-token");
  EXPECT_EQ(config->ns, "team-a");
  EXPECT_EQ(config->context, "main");
  EXPECT_EQ(config->describe().find("secret-token"), std::string::npos);
  EXPECT_NE(config->describe().find("auth=token"), std::string::npos);
}

TEST(KubeconfigTest, InsecureAndBasicAuth) {
  auto config = parse_kubeconfig(kubeconfig("    server: https://h\n    insecure-skip-tls-verify: true\n",
                                            "    username: admin\n    password: hunter2\n"),
                                 "/x");
  ASSERT_TRUE(config.ok()) << config.error().describe();
  EXPECT_FALSE(config->tls.verify);
  EXPECT_EQ(config->username, "admin");
  EXPECT_EQ(config->password, "hunter2");
  EXPECT_EQ(config->describe().find("hunter2"), std::string::npos);
}

TEST(KubeconfigTest, ClientCertificateDataAndFilesRelativeToKubeconfig) {
  TempDir dir;
  dir.write("certs/client.crt", "CERT");
  dir.write("certs/client.key", "KEY");
  dir.write("certs/ca.crt", "CA");
  dir.write("token", "file-token\n");
  auto path = dir.write(
      "kube/config",
      kubeconfig("    server: https://h\n    certificate-authority: ../certs/ca.crt\n",
                 "    client-certificate: ../certs/client.crt\n    client-key: ../certs/client.key\n"
                 "    tokenFile: ../token\n"));
  auto config = load_kubeconfig(path);
  ASSERT_TRUE(config.ok()) << config.error().describe();
  EXPECT_EQ(config->tls.ca_file, (dir.path() / "certs/ca.crt").string());
  EXPECT_EQ(config->tls.client_cert_file, (dir.path() / "certs/client.crt").string());
  EXPECT_EQ(config->tls.client_key_file, (dir.path() / "certs/client.key").string());
  EXPECT_EQ(config->token_file, (dir.path() / "token").string());

  auto data =
      parse_kubeconfig(kubeconfig("    server: https://h\n",
                                  "    client-certificate-data: Q0VSVA==\n    client-key-data: S0VZ\n"),
                       "/x");
  ASSERT_TRUE(data.ok()) << data.error().describe();
  EXPECT_EQ(data->tls.client_cert_pem, "CERT");
  EXPECT_EQ(data->tls.client_key_pem, "KEY");
}

TEST(KubeconfigTest, ExplicitContextOverridesCurrent) {
  std::string other_context = "- name: other\n  context:\n    cluster: c2\n    user: u1\n";
  std::string text = kubeconfig("    server: https://one\n", "    token: t\n", other_context);
  // A second cluster, listed before the contexts.
  text.replace(text.find("contexts:"), 0, "- name: c2\n  cluster:\n    server: https://two\n");
  auto config = parse_kubeconfig(text, "/x", "other");
  ASSERT_TRUE(config.ok()) << config.error().describe();
  EXPECT_EQ(config->server, "https://two");
  EXPECT_EQ(config->ns, "default");
  EXPECT_EQ(config->context, "other");
}

TEST(KubeconfigTest, MalformedInputsAreClearErrors) {
  struct Case {
    std::string text;
    std::string expected;
  };
  const Case cases[] = {
      {"clusters: [unclosed", "not valid YAML"},
      {"- a\n- b\n", "not a map"},
      {"current-context: main\n", "no context named \"main\""},
      {"current-context: main\ncontexts:\n- name: main\n  context:\n    cluster: missing\n",
       "no cluster named \"missing\""},
      {kubeconfig("    server: https://h\n    certificate-authority-data: '!!notbase64'\n", "    token: t\n"),
       "certificate-authority-data is not valid base64"},
      {kubeconfig("    server: https://h\n", "    client-key-data: '%%%'\n"),
       "client-key-data is not valid base64"},
      {kubeconfig("    insecure-skip-tls-verify: true\n", "    token: t\n"), "has no server"},
      {kubeconfig("    server: ftp://h\n", "    token: t\n"), "https://"},
      {kubeconfig("    server: https://h\n", "    exec:\n      command: aws\n"), "not supported"},
      {kubeconfig("    server: https://h\n", "    tokenFile: /does/not/exist\n"), "cannot read"},
      {kubeconfig("    server: https://h\n    certificate-authority: missing.crt\n", "    token: t\n"),
       "cannot read certificate-authority"},
      {kubeconfig("    server: https://h\n", "    client-certificate-data: Q0VSVA==\n"),
       "both certificate and key"},
      {kubeconfig("    server: [a, b]\n", "    token: t\n"), "must be a string"},
      {"apiVersion: v1\nclusters: 5\ncontexts: []\ncurrent-context: x\n", "no context named"},
      {"", "not a map"},
  };
  for (const auto& c : cases) {
    auto config = parse_kubeconfig(c.text, "/x");
    ASSERT_FALSE(config.ok()) << c.text;
    EXPECT_EQ(config.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(config.error().message.find(c.expected), std::string::npos)
        << "got: " << config.error().message << "\nfor: " << c.text;
  }
}

TEST(KubeconfigTest, UnreadableFileNamesThePath) {
  auto config = load_kubeconfig("/no/such/kubeconfig");
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.error().message.find("/no/such/kubeconfig"), std::string::npos);
}

TEST(InClusterTest, ReadsServiceAccountFolder) {
  TempDir dir;
  dir.write("token", "sa-token\n");
  dir.write("ca.crt", "CA");
  dir.write("namespace", "eslease-system\n");
  InClusterOptions options;
  options.service_account_dir = dir.path();
  options.getenv = [](const std::string& name) -> std::optional<std::string> {
    if (name == "KUBERNETES_SERVICE_HOST") return "fd00::1";
    if (name == "KUBERNETES_SERVICE_PORT") return "443";
    return std::nullopt;
  };
  auto config = load_in_cluster(options);
  ASSERT_TRUE(config.ok()) << config.error().describe();
  EXPECT_EQ(config->server, "https://[fd00::1]:443");
  EXPECT_EQ(config->token_file, (dir.path() / "token").string());
  EXPECT_EQ(config->tls.ca_file, (dir.path() / "ca.crt").string());
  EXPECT_EQ(config->ns, "eslease-system");
}

TEST(InClusterTest, ErrorsOutsideAPodOrWithoutToken) {
  TempDir dir;
  InClusterOptions options;
  options.service_account_dir = dir.path();
  options.getenv = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  auto outside = load_in_cluster(options);
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.error().message.find("KUBERNETES_SERVICE_HOST"), std::string::npos);
  options.getenv = [](const std::string& name) -> std::optional<std::string> {
    return name == "KUBERNETES_SERVICE_HOST" ? "10.0.0.1" : "443";
  };
  auto no_token = load_in_cluster(options);
  ASSERT_FALSE(no_token.ok());
  EXPECT_NE(no_token.error().message.find("token"), std::string::npos);
}

TEST(TokenSourceTest, RereadsRotatedFileAndKeepsLastGoodToken) {
  TempDir dir;
  auto path = dir.write("token", "first\n");
  auto source = TokenSource::from_file(path);
  EXPECT_EQ(*source.token(), "first");
  { std::ofstream(path) << "second-token"; }
  // Make the rotation visible even on filesystems with coarse timestamps.
  fs::last_write_time(path, fs::last_write_time(path) + std::chrono::seconds(5));
  EXPECT_EQ(*source.token(), "second-token");
  fs::remove(path);
  EXPECT_EQ(*source.token(), "second-token");
  auto missing = TokenSource::from_file(dir.path() / "never");
  EXPECT_FALSE(missing.token().ok());
  auto fixed = TokenSource::fixed("static");
  EXPECT_EQ(*fixed.token(), "static");
}

}  // namespace
}  // namespace eslease::kube
