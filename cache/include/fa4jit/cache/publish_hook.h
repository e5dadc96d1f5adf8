#pragma once
// Test-only observation points inside a publish, so a test can kill a writer at the worst
// moments and check that no partial entry ever becomes visible.
#include <functional>

namespace fa4jit::cache {

enum class PublishStage { FirstFileWritten, BeforeRename };
using PublishHook = std::function<void(PublishStage)>;

} // namespace fa4jit::cache
