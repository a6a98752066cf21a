// An errno's name and text: the names doctor net shows and the lab's rtnetlink errors say (RtnlError), one table.
#include "model/net.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace coldstart::net {
namespace {

TEST(ErrnoName, NamesTheErrnosBothFoldersMeet) {
  EXPECT_EQ(errno_name(ECONNREFUSED), "ECONNREFUSED");
  EXPECT_EQ(errno_name(EHOSTUNREACH), "EHOSTUNREACH");
  EXPECT_EQ(errno_name(EEXIST), "EEXIST");
  EXPECT_EQ(errno_name(ENODEV), "ENODEV");
  EXPECT_EQ(errno_name(EPROTO), "EPROTO");
  EXPECT_EQ(errno_name(4000), "errno 4000");
}

TEST(ErrnoText, StrerrorThenTheName) {
  EXPECT_EQ(errno_text(EPERM), std::string(std::strerror(EPERM)) + " (EPERM)");
  EXPECT_EQ(errno_text(EOPNOTSUPP), std::string(std::strerror(EOPNOTSUPP)) + " (EOPNOTSUPP)");
  EXPECT_NE(errno_text(4000).find("(errno 4000)"), std::string::npos);
}

}  // namespace
}  // namespace coldstart::net
