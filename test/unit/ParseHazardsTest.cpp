//===- ParseHazardsTest.cpp - Text upstream MLIR's parser crashes on -----===//
//
// Each list below was run through MLIR 22's mlir-opt: the accepted ones
// parse (the verifier may reject them), the hazards segfault it.
//
//===----------------------------------------------------------------------===//

#include "core/ParseHazards.h"

#include <gtest/gtest.h>

#include <string>

using namespace spmd;

namespace {

std::string transpose(const std::string &list) {
  return "func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>) -> "
         "tensor<8x4xf32> {\n"
         "  %r = linalg.transpose ins(%a : tensor<4x8xf32>) outs(%b : "
         "tensor<8x4xf32>) permutation = " +
         list +
         "\n"
         "  return %r : tensor<8x4xf32>\n"
         "}\n";
}

TEST(ParseHazards, AcceptedLists) {
  for (const char *list :
       {"[1, 0]", "[]", "[ 1 ,\n 0 ]", "[1, // comment\n 0]",
        "[-9223372036854775808, 0]", "[9223372036854775807, 0]",
        "[0x7fffffffffffffff, 0]", "[0x7FFFFFFFFFFFFFFF, 0]",
        "[-0x8000000000000000, 0]", "[- 1, 0]", "[-  0x1, 0]",
        "[0x00000000000000000001, 0]", "[00000000000000000000000000009, 0]",
        "[true, false]"})
    EXPECT_EQ(findParseHazard(transpose(list)), std::nullopt) << list;
}

TEST(ParseHazards, CrashingLists) {
  for (const char *list :
       {"[9223372036854775808, 0]", "[-9223372036854775809, 0]",
        "[0xffffffffffffffff, 0]", "[0x8000000000000000, 0]",
        "[-0x8000000000000001, 0]", "[+1, 0]", "[1, 0, ]", "[1 0]", "[0x, 0]",
        "[0X1, 0]", "[1e3, 0]", "[1.5, 0]", "[1 : i64, 0]", "[-true, 0]",
        "[x, 0]", "1, 0", "[1, 0"}) {
    std::string text = transpose(list);
    std::optional<ParseHazard> hazard = findParseHazard(text);
    ASSERT_NE(hazard, std::nullopt) << list;
    EXPECT_EQ(hazard->message,
              "'linalg.transpose' permutation is not a list of 64-bit "
              "integers");
    EXPECT_GE(hazard->offset, text.find("permutation = "));
  }
}

TEST(ParseHazards, Position) {
  std::string text = transpose("[9223372036854775808, 0]");
  std::optional<ParseHazard> hazard = findParseHazard(text);
  ASSERT_NE(hazard, std::nullopt);
  EXPECT_EQ(hazard->offset, text.find("9223372036854775808"));
}

TEST(ParseHazards, BroadcastAndReduce) {
  std::optional<ParseHazard> hazard =
      findParseHazard("%r = linalg.broadcast ins(%a : tensor<4xf32>) outs(%b : "
                      "tensor<4x8xf32>) dimensions = [x]");
  ASSERT_NE(hazard, std::nullopt);
  EXPECT_EQ(hazard->message,
            "'linalg.broadcast' dimensions is not a list of 64-bit integers");
  // The short form's payload braces come before ins/outs.
  hazard = findParseHazard(
      "%r = linalg.reduce { arith.addf } ins(%a : tensor<4x8xf32>) outs(%b "
      ": tensor<4xf32>) dimensions = [99999999999999999999]");
  ASSERT_NE(hazard, std::nullopt);
  EXPECT_EQ(hazard->message,
            "'linalg.reduce' dimensions is not a list of 64-bit integers");
  EXPECT_EQ(findParseHazard("%r = linalg.reduce ins(%a : tensor<4x8xf32>) "
                            "outs(%b : tensor<4xf32>) dimensions = [1]\n"
                            "  (%x: f32, %y: f32) { linalg.yield %x : f32 }"),
            std::nullopt);
}

TEST(ParseHazards, NotTheCustomSyntax) {
  // The generic form's properties, strings, comments, an attribute of the
  // same name inside an attribute dictionary, and a missing `=` (the
  // parser's own clean error) are left to the parser.
  for (const char *text : {
           "%r = \"linalg.transpose\"(%a, %b) <{permutation = array<i64: "
           "9223372036854775808, 0>}> ({})",
           "// linalg.transpose ins() outs() permutation = [x]\n",
           "\"linalg.transpose permutation = [x]\"",
           "%r = linalg.transpose {permutation = [x]} ins(%a : t) outs(%b : "
           "t) permutation = [1, 0]",
           "%r = linalg.transpose ins(%a : t) outs(%b : t) permutation [x]",
           "%r = linalg.transpose ins(%a : t) outs(%b : t)\n"
           "%s = foo {permutation = [x]}",
           "@linalg.transpose permutation = [x]",
           "ML\xEFR linalg.transpose permutation = [x]",
       })
    EXPECT_EQ(findParseHazard(text), std::nullopt) << text;
}

TEST(ParseHazards, SourceFiles) {
  EXPECT_EQ(unreadableSourceFile("/dev/zero"),
            "is a device, not a program file");
  EXPECT_EQ(unreadableSourceFile("/dev/null"), "");
  EXPECT_EQ(unreadableSourceFile("-"), "");
  EXPECT_EQ(unreadableSourceFile("/nonexistent/file.mlir"), "");
  EXPECT_EQ(unreadableSourceFile("/proc/self/exe"), ""); // a regular file
}

} // namespace
