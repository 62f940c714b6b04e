#include "http/ca_bundle.h"

#include <gtest/gtest.h>

#include <string>

#include "support/temp_dir.h"

namespace eslease::http {
namespace {

class CaBundleTest : public ::testing::Test {
 protected:
  std::string file(const std::string& name) {
    return dir_.write(name, "-----BEGIN CERTIFICATE-----\n").string();
  }
  std::string missing(const std::string& name) { return (dir_.path() / name).string(); }
  eslease::testing::TempDir dir_;
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
