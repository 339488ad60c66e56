// nn/io/atomic_file: temporaries named by their writer's pid, close-on-exec, and the cleanup of
// those a killed process left behind.
#define BOOST_TEST_MODULE atomic_file
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "nn/io/atomic_file.h"
#include "tests/test_util.h"

using namespace attograd::nn;
using attograd::testing::TempDir;
namespace fs = std::filesystem;

namespace {

// The pid of a process that has exited and been reaped: nothing runs under it now.
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

void touch(const fs::path& p, const std::string& bytes = "x") {
  std::ofstream(p, std::ios::binary) << bytes;
}

}  // namespace

BOOST_AUTO_TEST_CASE(temporaries_carry_their_writers_pid) {
  BOOST_TEST(temp_file_owner("ckpt.safetensors.tmp.123.aB3xYz").value_or(-1) == 123);
  BOOST_TEST(temp_file_owner("loss.svg.tmp.4194304.000000").value_or(-1) == 4194304);
  for (const char* not_ours :
       {"ckpt.safetensors", "ckpt.safetensors.tmp.123", "ckpt.safetensors.tmp.123.abcde",
        "ckpt.safetensors.tmp.123.abcdefg", "ckpt.safetensors.tmp.12a.abcdef",
        "ckpt.safetensors.tmp.0.abcdef", "ckpt.safetensors.tmp.-5.abcdef",
        "ckpt.safetensors.tmp.99999999999.abcdef", ".tmp.123.abcdef",
        "ckpt.safetensors.tmp.123.abc-ef", "notes.tmp.2024.backup1"}) {
    BOOST_TEST_INFO(not_ours);
    BOOST_TEST(!temp_file_owner(not_ours).has_value());
  }
}

BOOST_AUTO_TEST_CASE(an_atomic_file_is_a_close_on_exec_temporary_until_commit) {
  const TempDir dir;
  const fs::path target = dir.path / "ckpt.safetensors";
  {
    AtomicFile f(target.string());
    const std::string tmp = fs::path(f.temp_path()).filename().string();
    BOOST_TEST(tmp.rfind("ckpt.safetensors.tmp." + std::to_string(::getpid()) + ".", 0) == 0);
    BOOST_TEST(temp_file_owner(tmp).value_or(-1) == ::getpid());
    // The descriptor is close-on-exec: find it among ours by its target.
    bool found = false;
    for (const auto& e : fs::directory_iterator("/proc/self/fd")) {
      std::error_code ec;
      if (fs::read_symlink(e.path(), ec) != fs::path(f.temp_path())) continue;
      found = true;
      BOOST_TEST((::fcntl(std::stoi(e.path().filename().string()), F_GETFD) & FD_CLOEXEC) != 0);
    }
    BOOST_TEST(found);
    f.write("abc");
    // Not committed: the destructor removes it, and the target never appears.
  }
  BOOST_TEST(dir.entries().empty());
  write_file_atomically(target, "whole");
  BOOST_TEST(dir.entries() == std::vector<std::string>{"ckpt.safetensors"});
}

BOOST_AUTO_TEST_CASE(only_temporaries_of_dead_processes_are_removed) {
  const TempDir dir;
  const pid_t dead = dead_pid();
  const std::string stale = "ckpt.safetensors.tmp." + std::to_string(dead) + ".Ab12Cd";
  const std::string mine =
      "ckpt.safetensors.tmp." + std::to_string(::getpid()) + ".Ab12Cd";  // live: this process
  const std::string init = "loss.png.tmp.1.zzzzzz";                      // pid 1 always runs
  const std::string stale_plot = "perplexity.svg.tmp." + std::to_string(dead) + ".q1w2e3";
  touch(dir.path / stale, std::string(1 << 20, 'w'));
  touch(dir.path / mine);
  touch(dir.path / init);
  touch(dir.path / stale_plot);
  touch(dir.path / "ckpt.safetensors");
  touch(dir.path / "notes.tmp.txt");
  // A symlink or a directory with a temporary's name is not ours to delete.
  const std::string link = "a.tmp." + std::to_string(dead) + ".linkxx";
  const std::string subdir = "b.tmp." + std::to_string(dead) + ".dirxxx";
  fs::create_symlink(dir.path / "ckpt.safetensors", dir.path / link);
  fs::create_directory(dir.path / subdir);
  // Nor is a look-alike of a name no writer of ours makes here (issue 31, kind 8).
  const std::string notes = "notes.txt.tmp." + std::to_string(dead) + ".abcdef";
  touch(dir.path / notes);

  const StaleSweep sweep{.targets = {"ckpt.safetensors", "loss.png", "perplexity.svg", "a", "b"}};
  std::vector<fs::path> removed = remove_stale_temp_files(dir.path, sweep);
  std::sort(removed.begin(), removed.end());
  BOOST_TEST(removed == (std::vector<fs::path>{dir.path / stale, dir.path / stale_plot}),
             boost::test_tools::per_element());
  std::vector<std::string> left{
      "ckpt.safetensors", mine, init, "notes.tmp.txt", link, subdir, notes};
  std::sort(left.begin(), left.end());
  BOOST_TEST(dir.entries() == left, boost::test_tools::per_element());
  BOOST_TEST(remove_stale_temp_files(dir.path, sweep).empty());  // nothing stale is left
  BOOST_TEST(remove_stale_temp_files(dir.path / "missing", sweep).empty());
}

// Issue 31, kind 9: a temporary of PID 1 written just now (a container's first process, killed,
// seen from the host where PID 1 is alive and older) was kept for ever. With the directory's
// lock held, no other process writes our files there: every pid but ours is stale.
BOOST_AUTO_TEST_CASE(with_the_lock_held_every_other_processs_temporary_is_stale) {
  const TempDir dir;
  const std::string init = "ckpt.safetensors.tmp.1.Ab12Cd";  // written now, PID 1 alive
  const std::string mine = "loss.png.tmp." + std::to_string(::getpid()) + ".Ab12Cd";
  const std::string notes = "notes.txt.tmp.1.Ab12Cd";
  for (const std::string& name : {init, mine, notes}) touch(dir.path / name);
  const std::vector<std::string> targets{"ckpt.safetensors", "loss.png"};
  BOOST_TEST(remove_stale_temp_files(dir.path, {.targets = targets}).empty());
  BOOST_TEST(remove_stale_temp_files(dir.path, {.targets = targets, .locked = true}) ==
                 (std::vector<fs::path>{dir.path / init}),
             boost::test_tools::per_element());
  std::vector<std::string> left{mine, notes};
  std::sort(left.begin(), left.end());
  BOOST_TEST(dir.entries() == left, boost::test_tools::per_element());
}

// A pid is reused: a container's first process is PID 1 after every restart, so the temporary
// of a killed PID 1 names a live process for ever. A live process that started after the file
// was last written is not its writer (issue 22, kind 8): PID 1 started at boot, this process
// when the test began; a file last written in 2001 is older than both.
BOOST_AUTO_TEST_CASE(a_temporary_older_than_the_process_now_holding_its_pid_is_stale) {
  const TempDir dir;
  const std::string me = std::to_string(::getpid());
  const std::string old_init = "ckpt.safetensors.tmp.1.Ab12Cd";
  const std::string old_mine = "loss.png.tmp." + me + ".Ab12Cd";
  const std::string new_mine = "loss.svg.tmp." + me + ".Ab12Cd";  // written now: maybe ours
  const std::string new_init = "eval_log.csv.tmp.1.Ab12Cd";       // written now by a live PID 1
  for (const std::string& name : {old_init, old_mine, new_mine, new_init}) touch(dir.path / name);
  const timespec long_ago[2] = {{1'000'000'000, 0}, {1'000'000'000, 0}};  // 2001-09-09
  for (const std::string& name : {old_init, old_mine})
    BOOST_REQUIRE(::utimensat(AT_FDCWD, (dir.path / name).c_str(), long_ago, 0) == 0);
  std::vector<fs::path> removed = remove_stale_temp_files(
      dir.path, {.targets = {"ckpt.safetensors", "loss.png", "loss.svg", "eval_log.csv"}});
  std::sort(removed.begin(), removed.end());
  BOOST_TEST(removed == (std::vector<fs::path>{dir.path / old_init, dir.path / old_mine}),
             boost::test_tools::per_element());
  std::vector<std::string> left{new_init, new_mine};
  std::sort(left.begin(), left.end());
  BOOST_TEST(dir.entries() == left, boost::test_tools::per_element());
}
