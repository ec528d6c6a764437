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
