#include "http/ca_bundle.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace eslease::http {
namespace {

namespace fs = std::filesystem;

class CaBundleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ca-bundle-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string file(const std::string& name) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << "-----BEGIN CERTIFICATE-----\n";
    return path;
  }
  std::string missing(const std::string& name) { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(CaBundleTest, SslCertFileComesFirst) {
  const std::string chosen = file("chosen.pem");
  EXPECT_EQ(find_ca_bundle(chosen, {file("debian.crt")}), chosen);
}

TEST_F(CaBundleTest, FirstExistingLocationWhenTheVariableIsUnsetOrUnreadable) {
  const std::string alpine = file("cert.pem");
  EXPECT_EQ(find_ca_bundle(std::nullopt, {missing("debian.crt"), missing("fedora.crt"), alpine}), alpine);
  EXPECT_EQ(find_ca_bundle(missing("gone.pem"), {missing("debian.crt"), alpine}), alpine);
}

TEST_F(CaBundleTest, NothingFoundLeavesOpenSslDefaults) {
  EXPECT_EQ(find_ca_bundle(std::nullopt, {missing("a"), missing("b")}), "");
}

}  // namespace
}  // namespace eslease::http
