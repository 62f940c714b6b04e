#include "es/credentials.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace eslease::es {
namespace {

class TempFile {
 public:
  explicit TempFile(const std::string& content) {
    path_ = std::filesystem::temp_directory_path() /
            ("eslease-cred-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    write(content);
  }
  ~TempFile() { std::filesystem::remove(path_); }
  void write(const std::string& content) {
    // Replace the file the way a Secret volume does (new inode), so the change is seen
    // even within one mtime tick.
    const auto tmp = path_.string() + ".new";
    std::ofstream(tmp, std::ios::trunc) << content;
    std::filesystem::rename(tmp, path_);
  }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

TEST(Credentials, NoneConfigured) {
  CredentialProvider provider({});
  auto header = provider.authorization();
  ASSERT_TRUE(header.ok());
  EXPECT_FALSE(header->has_value());
}

TEST(Credentials, BasicFromFileWithTrailingNewline) {
  TempFile password("changeme\n");
  CredentialProvider provider({"elastic", password.path(), "", ""});
  auto header = provider.authorization();
  ASSERT_TRUE(header.ok());
  EXPECT_EQ(**header, "Basic ZWxhc3RpYzpjaGFuZ2VtZQ==");
}

TEST(Credentials, ApiKeyRawOrEncoded) {
  TempFile raw("id1:key1");
  TempFile encoded("aWQxOmtleTE=");
  auto a = CredentialProvider({"", "", raw.path(), ""}).authorization();
  auto b = CredentialProvider({"", "", encoded.path(), ""}).authorization();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(**a, "ApiKey aWQxOmtleTE=");
  EXPECT_EQ(**b, "ApiKey aWQxOmtleTE=");
}

TEST(Credentials, RotationIsPickedUp) {
  TempFile token("first-token");
  CredentialProvider provider({"", "", "", token.path()});
  EXPECT_EQ(**provider.authorization(), "Bearer first-token");
  token.write("second-token-longer");
  EXPECT_EQ(**provider.authorization(), "Bearer second-token-longer");
}

TEST(Credentials, MissingOrEmptyFileIsClearErrorWithoutSecret) {
  CredentialProvider missing({"", "", "", "/nonexistent/eslease/token"});
  auto r = missing.authorization();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message.find("/nonexistent/eslease/token"), std::string::npos);

  TempFile empty("\n");
  auto e = CredentialProvider({"", "", "", empty.path()}).authorization();
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("empty"), std::string::npos);

  // A directory (a Secret mounted at the wrong path, say) is named as such.
  auto d = CredentialProvider({"", "", "", std::filesystem::temp_directory_path().string()}).authorization();
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("not a regular file"), std::string::npos);

  TempFile two_lines("secret-one\nsecret-two");
  auto t = CredentialProvider({"", "", "", two_lines.path()}).authorization();
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message.find("secret-one"), std::string::npos);
}

TEST(Credentials, ValidateRejectsMixedOrIncompleteKinds) {
  EXPECT_TRUE(validate(CredentialOptions{}).ok());
  EXPECT_FALSE(validate(CredentialOptions{"u", "", "", ""}).ok());
  EXPECT_FALSE(validate(CredentialOptions{"", "/p", "", ""}).ok());
  EXPECT_FALSE(validate(CredentialOptions{"u", "/p", "/k", ""}).ok());
  EXPECT_FALSE(validate(CredentialOptions{"", "", "/k", "/t"}).ok());
  EXPECT_FALSE(validate(CredentialOptions{"u:x", "/p", "", ""}).ok());
  EXPECT_TRUE(validate(CredentialOptions{"u", "/p", "", ""}).ok());
}

}  // namespace
}  // namespace eslease::es
