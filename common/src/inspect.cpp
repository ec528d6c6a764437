#include "course/inspect.h"

#include <array>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

namespace course::inspect {

std::vector<PtxModule> parse_ptx_modules(const std::string& bytes) {
  std::vector<PtxModule> modules;
  const std::string version = ".version ";
  std::size_t at = bytes.find(version);
  while (at != std::string::npos) {
    // A module is NUL-terminated text inside the fatbinary.
    std::size_t end = bytes.find('\0', at);
    if (end == std::string::npos) end = bytes.size();
    PtxModule module;
    module.text = bytes.substr(at, end - at);
    const std::size_t target = module.text.find(".target ");
    if (target != std::string::npos) {
      std::size_t name_end = target + 8;
      while (name_end < module.text.size() &&
             (std::isalnum(static_cast<unsigned char>(module.text[name_end])) ||
              module.text[name_end] == '_')) {
        ++name_end;
      }
      module.target = module.text.substr(target + 8, name_end - target - 8);
      modules.push_back(std::move(module));
    }
    at = bytes.find(version, end);
  }
  return modules;
}

std::vector<PtxModule> read_ptx_modules(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error("cannot read " + path);
  std::ostringstream bytes;
  bytes << file.rdbuf();
  return parse_ptx_modules(bytes.str());
}

const PtxModule& module_for(const std::vector<PtxModule>& modules, const std::string& target) {
  std::string found;
  for (const PtxModule& m : modules) {
    if (m.target == target) return m;
    found += " " + m.target;
  }
  throw std::runtime_error("no PTX for " + target + " (found:" + (found.empty() ? " none" : found) +
                           "); was the object built for that architecture with --no-compress?");
}

namespace {
/// The text between the brace at or after `from` and its matching closing brace.
std::string braced_body(const std::string& text, std::size_t from) {
  const std::size_t open = text.find('{', from);
  if (open == std::string::npos) return {};
  int depth = 0;
  for (std::size_t i = open; i < text.size(); ++i) {
    if (text[i] == '{') ++depth;
    if (text[i] == '}' && --depth == 0) return text.substr(open, i - open + 1);
  }
  return text.substr(open);
}
}  // namespace

std::vector<Function> ptx_kernels(const PtxModule& module) {
  std::vector<Function> kernels;
  const std::string entry = ".entry ";
  for (std::size_t at = module.text.find(entry); at != std::string::npos;
       at = module.text.find(entry, at + entry.size())) {
    const std::size_t name_begin = at + entry.size();
    const std::size_t name_end = module.text.find_first_of("( \n", name_begin);
    Function f;
    f.name = module.text.substr(name_begin, name_end - name_begin);
    f.body = braced_body(module.text, name_end);
    kernels.push_back(std::move(f));
  }
  return kernels;
}

Function kernel(const PtxModule& module, const std::string& name_part) {
  std::vector<Function> matches;
  for (Function& f : ptx_kernels(module)) {
    if (f.name.find(name_part) != std::string::npos) matches.push_back(std::move(f));
  }
  if (matches.size() != 1) {
    throw std::runtime_error(std::to_string(matches.size()) + " kernels in the " + module.target +
                             " PTX match '" + name_part + "' (expected exactly one)");
  }
  return matches.front();
}

std::vector<Function> sass_functions(const std::string& listing) {
  std::vector<Function> functions;
  const std::string marker = "Function : ";
  std::size_t at = listing.find(marker);
  while (at != std::string::npos) {
    const std::size_t name_begin = at + marker.size();
    const std::size_t name_end = listing.find('\n', name_begin);
    const std::size_t next = listing.find(marker, name_end);
    Function f;
    f.name = listing.substr(name_begin, name_end - name_begin);
    while (!f.name.empty() && std::isspace(static_cast<unsigned char>(f.name.back())))
      f.name.pop_back();
    f.body =
        listing.substr(name_end, (next == std::string::npos ? listing.size() : next) - name_end);
    functions.push_back(std::move(f));
    at = next;
  }
  return functions;
}

namespace {

std::string trimmed(const std::string& text) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  const std::size_t last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

/// `text` split at the commas that are not inside brackets or braces.
std::vector<std::string> top_level_operands(const std::string& text) {
  std::vector<std::string> operands;
  std::string current;
  int depth = 0;
  for (char c : text) {
    if (c == '[' || c == '{' || c == '(') ++depth;
    if (c == ']' || c == '}' || c == ')') --depth;
    if (c == ',' && depth == 0) {
      operands.push_back(trimmed(current));
      current.clear();
    } else {
      current += c;
    }
  }
  if (!trimmed(current).empty()) operands.push_back(trimmed(current));
  return operands;
}

/// Opcodes whose first operand is read, not written (stores, copies, branches, barriers...).
bool writes_first_operand(const std::string& opcode) {
  static const char* const kNoDestination[] = {"st",
                                               "cp",
                                               "red",
                                               "bar",
                                               "barrier",
                                               "bra",
                                               "ret",
                                               "exit",
                                               "fence",
                                               "membar",
                                               "prefetch",
                                               "prefetchu",
                                               "trap",
                                               "call",
                                               "mbarrier.init",
                                               "mbarrier.inval",
                                               "nanosleep",
                                               "multimem.st",
                                               "multimem.red",
                                               "tensormap",
                                               "griddepcontrol",
                                               "discard",
                                               "applypriority",
                                               "stmatrix",
                                               "wmma.store"};
  for (const char* prefix : kNoDestination) {
    // The opcode itself or the opcode with qualifiers: "st" matches "st.global.u32".
    const std::string p = prefix;
    if (opcode == p || opcode.rfind(p + ".", 0) == 0) return false;
  }
  return true;
}

/// The registers ("%r12", "%rd3", "%p1") named in an operand.
std::vector<std::string> registers_in(const std::string& operand) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < operand.size(); ++i) {
    if (operand[i] != '%') continue;
    std::size_t end = i + 1;
    while (end < operand.size() && (std::isalnum(static_cast<unsigned char>(operand[end])) ||
                                    operand[end] == '_' || operand[end] == '.')) {
      ++end;
    }
    names.push_back(operand.substr(i, end - i));
    i = end - 1;
  }
  return names;
}

/// The symbols (identifiers not starting with '%') named in an operand: "param_N" for a
/// kernel parameter, the name itself otherwise. Numbers are not symbols.
std::vector<std::string> symbols_in(const std::string& operand) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < operand.size(); ++i) {
    const char c = operand[i];
    const bool starts = std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$';
    const bool after_word = i > 0 && (std::isalnum(static_cast<unsigned char>(operand[i - 1])) ||
                                      operand[i - 1] == '_' || operand[i - 1] == '%' ||
                                      operand[i - 1] == '.' || operand[i - 1] == '$');
    if (!starts || after_word) continue;
    std::size_t end = i;
    while (end < operand.size() && (std::isalnum(static_cast<unsigned char>(operand[end])) ||
                                    operand[end] == '_' || operand[end] == '$')) {
      ++end;
    }
    std::string name = operand.substr(i, end - i);
    const std::size_t param = name.rfind("_param_");
    if (param != std::string::npos &&
        name.find_first_not_of("0123456789", param + 7) == std::string::npos &&
        param + 7 < name.size()) {
      name = "param_" + name.substr(param + 7);
    }
    names.push_back(name);
    i = end - 1;
  }
  return names;
}

}  // namespace

namespace {

/// `body` without its // comments.
std::string without_comments(const std::string& body) {
  std::string text;
  std::istringstream lines(body);
  std::string line;
  while (std::getline(lines, line)) {
    const std::size_t comment = line.find("//");
    if (comment != std::string::npos) line.resize(comment);
    text += line + "\n";
  }
  return text;
}

bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$';
}

/// A statement without what may come before its instruction: the braces that open or close
/// an inline-asm scope, and labels ("$L__BB0_2:": a word, then one colon, never "::").
std::string without_braces_and_labels(std::string statement) {
  statement = trimmed(statement);
  while (!statement.empty() && (statement[0] == '{' || statement[0] == '}')) {
    statement = trimmed(statement.substr(1));
  }
  for (bool label = true; label;) {
    std::size_t word = 0;
    while (word < statement.size() && is_word_char(statement[word])) ++word;
    label = word > 0 && word < statement.size() && statement[word] == ':' &&
            (word + 1 == statement.size() || statement[word + 1] != ':');
    if (label) statement = trimmed(statement.substr(word + 1));
  }
  return statement;
}

}  // namespace

std::vector<PtxInstruction> ptx_instructions(const std::string& body) {
  // Comments out, then one statement per ';' (braces of inline-asm scopes are not statements).
  const std::string text = without_comments(body);
  std::vector<PtxInstruction> code;
  std::size_t begin = 0;
  for (std::size_t end = text.find(';'); end != std::string::npos;
       begin = end + 1, end = text.find(';', begin)) {
    std::string statement = without_braces_and_labels(text.substr(begin, end - begin));
    if (statement.empty() || statement[0] == '.') continue;  // a directive
    if (statement[0] == '@') {                               // a guard predicate
      const std::size_t space = statement.find_first_of(" \t");
      if (space == std::string::npos) continue;
      statement = trimmed(statement.substr(space));
    }
    const std::size_t space = statement.find_first_of(" \t\n");
    PtxInstruction instruction;
    instruction.opcode = statement.substr(0, space);
    if (space != std::string::npos) {
      instruction.operands = top_level_operands(statement.substr(space));
    }
    code.push_back(std::move(instruction));
  }
  return code;
}

std::set<std::string> operand_origins(const std::string& operand, const ValueOrigins& origins) {
  std::set<std::string> roots;
  for (const std::string& reg : registers_in(operand)) {
    const auto found = origins.find(reg);
    if (found != origins.end()) roots.insert(found->second.begin(), found->second.end());
  }
  for (const std::string& symbol : symbols_in(operand)) roots.insert(symbol);
  return roots;
}

ValueOrigins value_origins(const std::vector<PtxInstruction>& code) {
  ValueOrigins origins;
  // Iterate to a fixed point: a loop carries origins back to earlier instructions.
  for (bool changed = true; changed;) {
    changed = false;
    for (const PtxInstruction& instruction : code) {
      if (instruction.operands.empty() || !writes_first_operand(instruction.opcode)) continue;
      std::set<std::string> roots;
      bool reads_a_register = false;
      for (std::size_t i = 1; i < instruction.operands.size(); ++i) {
        const std::set<std::string> from = operand_origins(instruction.operands[i], origins);
        roots.insert(from.begin(), from.end());
        reads_a_register = reads_a_register || !registers_in(instruction.operands[i]).empty();
      }
      // A value made from no register and no symbol is rooted in the instruction itself.
      if (roots.empty() && !reads_a_register) roots.insert(instruction.opcode);
      for (const std::string& reg : registers_in(instruction.operands[0])) {
        std::set<std::string>& mine = origins[reg];
        const std::size_t before = mine.size();
        mine.insert(roots.begin(), roots.end());
        changed = changed || mine.size() != before;
      }
    }
  }
  return origins;
}

std::string run_command(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) throw std::runtime_error("cannot run: " + command);
  std::string output;
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe.get())) > 0)
    output.append(buffer.data(), n);
  const int status = pclose(pipe.release());
  if (status != 0)
    throw std::runtime_error("command failed (" + std::to_string(status) + "): " + command);
  return output;
}

bool uses(const std::string& text, const std::string& instruction) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const std::size_t comment = line.find("//");
    if (comment != std::string::npos) line.resize(comment);
    for (std::size_t at = line.find(instruction); at != std::string::npos;
         at = line.find(instruction, at + 1)) {
      // A token starts after whitespace/punctuation and continues with '.', space or end.
      const bool starts = at == 0 || !(std::isalnum(static_cast<unsigned char>(line[at - 1])) ||
                                       line[at - 1] == '_' || line[at - 1] == '.');
      const std::size_t after = at + instruction.size();
      const bool ends = after >= line.size() || line[after] == '.' || line[after] == ' ' ||
                        line[after] == '\t' || line[after] == ';';
      if (starts && ends) return true;
    }
  }
  return false;
}

}  // namespace course::inspect
