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

// A forward reference resolved from a region that does not enclose the
// use: linalg.generic's parser frees that region on a later error with the
// use still linked to it (heap corruption in MLIR 22).
TEST(ParseHazards, CrossRegionForwardReference) {
  const std::string generic =
      "  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = "
      "[\"parallel\"]}\n"
      "      ins(%x : tensor<4xf32>) outs(%x : tensor<4xf32>) {\n";
  std::string text = "func.func @f(%x: tensor<4xf32>) {\n" + generic +
                     "      linalg.yield %a : f32\n"
                     "  } -> tensor<4xf32>\n" +
                     generic +
                     "    ^bb0(%a: f32, %o: f32):\n"
                     "    ^bb0(%a: f32, %o: f32):\n"
                     "  } -> tensor<4xf32>\n}\n";
  std::optional<ParseHazard> hazard = findParseHazard(text);
  ASSERT_NE(hazard, std::nullopt);
  EXPECT_EQ(hazard->offset, text.find("%a"));
  EXPECT_EQ(hazard->message, "'%a' is used before its definition at line "
                             "8:10, in a region that does not enclose this "
                             "use");
  // A result defined in a sibling region, and a function-level use defined
  // in a nested region.
  EXPECT_NE(findParseHazard("%y = scf.execute_region -> f32 {\n"
                            "  scf.yield %a : f32\n}\n"
                            "%r = scf.execute_region -> f32 {\n"
                            "  %a = arith.negf %x : f32\n  ^bb0:\n}\n"),
            std::nullopt);
  EXPECT_NE(findParseHazard("%y = arith.addf %a, %x : f32\n"
                            "%r = scf.execute_region -> f32 {\n"
                            "  %a = arith.negf %x : f32\n}\n"),
            std::nullopt);
  // Result numbers: %a#1 is not resolved by a one-value %a.
  EXPECT_EQ(findParseHazard("%y = arith.addf %a#1, %x : f32\n"
                            "%r = scf.execute_region -> f32 {\n"
                            "  %a = arith.negf %x : f32\n}\n"),
            std::nullopt);
}

TEST(ParseHazards, ForwardReferencesAccepted) {
  for (const char *text : {
           // A CFG out of dominance order, also from a nested region.
           "cf.br ^bb2\n^bb1:\n  %y = arith.negf %z : f32\n"
           "  %r = scf.execute_region -> f32 {\n    scf.yield %z : f32\n  }\n"
           "^bb2:\n  %z = arith.negf %x : f32\n  cf.br ^bb1\n",
           // A definition between the use and the other region's.
           "%y = arith.negf %z : f32\n%z = arith.negf %x : f32\n"
           "scf.execute_region {\n  %z = arith.negf %x : f32\n}\n",
           // Defined by what the scan cannot read for sure (a loop's
           // induction variable, a multi-line op, a function argument).
           "scf.for %i = %a to %b step %c {\n  %u = arith.addi %i, %i : "
           "index\n}\nscf.execute_region {\n  %i = arith.constant 0 : "
           "index\n}\n",
           "%u = arith.addi %i, %i : index\n"
           "%v = scf.for %i = %a to %b step %c {\n}\n",
           "func.func @f(%a: f32) {\n  %y = arith.negf %a : f32\n}\n"
           "func.func @g() {\n  scf.execute_region {\n^bb0(%a: f32):\n  }\n}\n",
           // Successor operands are uses, not block arguments.
           "%y = arith.negf %a : f32\nscf.execute_region {\n"
           "  cf.cond_br %c,\n  ^bb1(%a : f32), ^bb2\n}\n",
           // A region of an op that may be isolated from above.
           "%y = arith.negf %a : f32\ngpu.module @m {\n"
           "  %a = arith.constant 0.0 : f32\n}\n%a = arith.constant 1.0 : "
           "f32\n",
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
