// Where tests and benchmarks find their files. The paths are fixed when the build is configured
// and compiled into test_paths.cpp alone: ccache keys an object on the text it compiles, so an
// absolute path in every test object would make a checkout in another folder (CI's clone)
// compile them all again.
#pragma once

#include <filesystem>
#include <string_view>

namespace sgl::test {

// The checkout.
std::filesystem::path source_dir();
// The build folder: the tools the CLI tests run, the files the build writes for the tests.
std::filesystem::path binary_dir();
// ../shared/testdata beside the checkout; SGL_TESTDATA_DIR in the environment overrides it
// (binaries carried to the GPU machine find the data there).
std::filesystem::path testdata_dir();
// A test folder's committed data: tests/<test_folder>/data.
std::filesystem::path test_data_dir(std::string_view test_folder);
// A test folder's build folder (its CMAKE_CURRENT_BINARY_DIR), where the build writes files for
// its tests: tests/<test_folder> under binary_dir().
std::filesystem::path test_build_dir(std::string_view test_folder);
// The path in the environment variable `var` when it is set (binaries carried to the GPU machine
// find their files there), else `otherwise`.
std::filesystem::path path_from_env(const char* var, std::filesystem::path otherwise);

}  // namespace sgl::test
