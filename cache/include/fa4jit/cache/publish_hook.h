#pragma once
// Test-only observation points inside a publish, so a test can kill a writer at the worst
// moments and check that no partial entry ever becomes visible, or make the publish fail there
// as a write would (a full disk): the hook returns 0 to go on, or the errno to fail with.
#include <functional>

namespace fa4jit::cache {

enum class PublishStage { FirstFileWritten, BeforeRename };
using PublishHook = std::function<int(PublishStage)>;

} // namespace fa4jit::cache
