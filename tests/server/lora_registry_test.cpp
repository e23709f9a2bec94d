// LoraRegistry: names to the engine's ids, leases that hold an unload back, loads reserved and
// committed or cancelled, and --max-loaded-loras' choice of the adapter to unload.
#include "server/lora_registry.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace sgl::server {
namespace {

model::LoraAdapterPath adapter(const std::string& name, bool pinned = false) {
  return {name, "/adapters/" + name, pinned};
}

TEST(LoraRegistry, NamesTheStartsAdaptersByIdAndRefusesOthers) {
  LoraRegistry registry(true, {adapter("a"), adapter("b")}, 0);
  EXPECT_EQ(registry.acquire("a")->id, 1);
  EXPECT_EQ(registry.acquire("b")->id, 2);
  const auto missing = registry.acquire("c");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("not loaded: c\nLoaded adapters: [a, b]"),
            std::string::npos)
      << missing.status().message();
  LoraRegistry off(false, {}, 0);
  EXPECT_NE(off.acquire("a").status().message().find("LoRA is not enabled"), std::string::npos);
  EXPECT_NE(off.reserve(adapter("a")).status().message().find("LoRA is not enabled"),
            std::string::npos);
}

TEST(LoraRegistry, ALoadTakesTheFirstFreeIdWithAKeyNoEarlierLoadHad) {
  LoraRegistry registry(true, {adapter("a"), adapter("b")}, 0);
  auto first = registry.reserve(adapter("c"));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->id, 3);
  EXPECT_FALSE(registry.acquire("c").ok()) << "served before its commit";
  EXPECT_FALSE(registry.reserve(adapter("c")).ok()) << "the name is being loaded";
  registry.commit(first->id);
  EXPECT_EQ(registry.acquire("c")->id, 3);
  EXPECT_FALSE(registry.reserve(adapter("c")).ok()) << "already loaded";

  ASSERT_EQ(*registry.begin_unload("a"), 1);
  EXPECT_TRUE(registry.wait_unused(1, [] { return false; }));
  registry.finish_unload(1);
  auto again = registry.reserve(adapter("a"));  // id 1 is free again; the key is new
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->id, 1);
  EXPECT_NE(again->key, first->key);
  registry.cancel(again->id);
  EXPECT_FALSE(registry.acquire("a").ok());
  std::vector<std::string> names;
  for (const auto& a : registry.adapters()) names.push_back(a.name);
  EXPECT_EQ(names, (std::vector<std::string>{"b", "c"}));
}

TEST(LoraRegistry, AnUnloadRefusesNewRequestsAndWaitsForTheLeasesHeld) {
  LoraRegistry registry(true, {adapter("a")}, 0);
  auto use = registry.acquire("a");
  ASSERT_TRUE(use.ok());
  ASSERT_EQ(*registry.begin_unload("a"), 1);
  EXPECT_FALSE(registry.acquire("a").ok()) << "a request after the unload began";
  EXPECT_FALSE(registry.begin_unload("a").ok()) << "unloaded twice";
  EXPECT_FALSE(registry.reserve(adapter("a")).ok()) << "loaded while it unloads";
  std::atomic<bool> waited{false};
  std::thread unloading([&] {
    EXPECT_TRUE(registry.wait_unused(1, [] { return false; }));
    waited = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(waited) << "the unload did not wait for the request's lease";
  use->lease.reset();  // the request ends
  unloading.join();
  EXPECT_TRUE(waited);
  registry.finish_unload(1);
  EXPECT_TRUE(registry.adapters().empty());
}

// An unload that gives up (paused requests hold leases) serves the adapter again.
TEST(LoraRegistry, AnUnloadThatGivesUpServesTheAdapterAgain) {
  LoraRegistry registry(true, {adapter("a")}, 0);
  auto use = registry.acquire("a");
  ASSERT_TRUE(use.ok());
  ASSERT_EQ(*registry.begin_unload("a"), 1);
  EXPECT_FALSE(registry.wait_unused(1, [] { return true; }));
  EXPECT_EQ(registry.acquire("a")->id, 1);
  use->lease.reset();
  ASSERT_EQ(*registry.begin_unload("a"), 1);
  EXPECT_TRUE(registry.wait_unused(1, [] { return true; })) << "unused: no need to give up";
}

TEST(LoraRegistry, MaxLoadedEvictsTheLeastRecentlyUsedUnpinnedAdapter) {
  LoraRegistry registry(true, {adapter("a"), adapter("b"), adapter("p", true)}, 3);
  ASSERT_TRUE(registry.acquire("b").ok());
  ASSERT_TRUE(registry.acquire("a").ok());  // b is now the least recently used
  EXPECT_EQ(*registry.eviction_for_load(), std::optional<std::string>("b"));
  ASSERT_TRUE(registry.acquire("b").ok());
  EXPECT_EQ(*registry.eviction_for_load(), std::optional<std::string>("a"));
  ASSERT_EQ(*registry.begin_unload("a"), 1);
  EXPECT_TRUE(registry.wait_unused(1, [] { return false; }));
  registry.finish_unload(1);
  EXPECT_EQ(*registry.eviction_for_load(), std::nullopt) << "room for one";

  LoraRegistry pinned(true, {adapter("x", true), adapter("y", true)}, 2);
  const auto refused = pinned.eviction_for_load();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  LoraRegistry unbounded(true, {adapter("x"), adapter("y")}, 0);
  EXPECT_EQ(*unbounded.eviction_for_load(), std::nullopt);
}

}  // namespace
}  // namespace sgl::server
