// The eslease tool's exit codes, the same in both modes; `eslease --help` and the README
// list them. `run` otherwise exits with its command's code (128 + N when a signal N ended
// it, 127 when it could not be started).
#pragma once

namespace eslease::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;        // the request failed; the message says why
inline constexpr int kExitUsage = 2;         // bad flags or names; nothing was contacted
inline constexpr int kExitWaitTimedOut = 3;  // --wait ran out before the lock was held (or released)
inline constexpr int kExitLockLost = 4;  // run: the lock was lost or could not be confirmed, CMD was stopped

}  // namespace eslease::cli
