/// \file inspect.h
/// \brief Reading what the compiler emitted: the PTX embedded in an object file, and
/// cuobjdump's SASS listing. The lessons' PTX/SASS checks use these to prove that a
/// kernel really uses the instruction it teaches (cp.async, cp.async.bulk, mbarrier...).
///
/// The lesson helper compiles kernels with `--no-compress`, so each object keeps one
/// plain-text PTX module per virtual architecture (compute_80, compute_90, ...).
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace course::inspect {

/// One PTX module: its `.target` (e.g. "sm_90") and its text.
struct PtxModule {
  std::string target;
  std::string text;
};

/// One kernel (or function) and its body.
struct Function {
  std::string name;  ///< mangled name
  std::string body;
};

/// Every PTX module found in `bytes` (the contents of an object file or executable).
std::vector<PtxModule> parse_ptx_modules(const std::string& bytes);
/// Reads `path` and returns its PTX modules; throws std::runtime_error if unreadable.
std::vector<PtxModule> read_ptx_modules(const std::string& path);
/// The module for `target` ("sm_80"), or throws std::runtime_error listing those found.
const PtxModule& module_for(const std::vector<PtxModule>& modules, const std::string& target);

/// The `.entry` kernels of a PTX module, each with its body between its outer braces.
std::vector<Function> ptx_kernels(const PtxModule& module);
/// The kernel whose mangled name contains `name_part`; throws if none or several match.
Function kernel(const PtxModule& module, const std::string& name_part);

/// The functions of a `cuobjdump -sass` listing ("Function : name" sections).
std::vector<Function> sass_functions(const std::string& listing);

/// One PTX instruction: its opcode with every qualifier and type, as written (e.g.
/// "cp.async.cg.shared.global.L2::cache_hint"), and its operands as written, split at the
/// top-level commas ("[%r12]", "%rd16", "{%r1, %r2}").
struct PtxInstruction {
  std::string opcode;
  std::vector<std::string> operands;
};

/// The instructions of a PTX body, in order, without comments, labels, directives
/// (".reg ..."), guard predicates ("@%p1") or the braces of inline-asm scopes.
std::vector<PtxInstruction> ptx_instructions(const std::string& body);

/// Where the values of a body's registers may come from: for every register an instruction
/// writes, the union over every instruction that writes it (every path, loops included) of
/// what its source operands come from. The roots are kernel parameters ("param_N", for a
/// symbol ending in "_param_N"), other symbols (a shared array's mangled name, as written),
/// and instructions that make a value from no register, named by their opcode (e.g.
/// "createpolicy.fractional.L2::evict_last.b64"). Special registers (%tid.x, ...) and
/// immediates add nothing. A may-analysis: what it lists can reach the register, what it
/// does not list cannot. The PTX checks use it to tell which access carries which value.
using ValueOrigins = std::map<std::string, std::set<std::string>>;
ValueOrigins value_origins(const std::vector<PtxInstruction>& code);

/// The roots one operand ("[%r12]", "%rd16", "_Z..._param_0") may come from, given
/// value_origins() of its body.
std::set<std::string> operand_origins(const std::string& operand, const ValueOrigins& origins);

/// Runs a shell command and returns its standard output; throws on a non-zero exit.
std::string run_command(const std::string& command);

/// Whether `text` holds `instruction` as a whole PTX/SASS token prefix, e.g. "cp.async"
/// matches "cp.async.ca.shared.global" but not "cp.async_foo"... and never a comment.
bool uses(const std::string& text, const std::string& instruction);

}  // namespace course::inspect
