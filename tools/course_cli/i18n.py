"""The language of `./course`: English by default, Chinese (zh) when asked.

Asked for, first match wins: `--lang zh` (or `--lang en`), the environment variable
COURSE_LANG, then a zh_* locale in LC_ALL, LC_MESSAGES or LANG. The messages of `list`, `hint`,
`check` and `run` are written in English in the code and passed through tr(); in Chinese,
tr() looks each one up in ZH below (tests/tools/test_course_cli.py checks that every message
of those commands has its entry). Lesson titles come from the catalog's title_zh, hint rungs
and TODO contracts from each lesson's given/hints.json, and the READMEs and NOTES a message
names from their Chinese editions.
"""

import os

LANGUAGES = ("en", "zh")
_language = "en"


def choose(requested: str | None, environ=os.environ, default: str | None = None) -> str:
    """The language to speak: `requested` (from --lang), else COURSE_LANG, else `default` (a
    Chinese-only handout's "zh"), else the locale."""
    for value in (requested, environ.get("COURSE_LANG")):
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    if default in LANGUAGES:
        return default
    for variable in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = environ.get(variable)
        if value:  # the first one set decides, as for gettext
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


_by_flag = False
_one_edition = False  # a handout of one edition: every README is README.md, in its language


def set_language(language: str, by_flag: bool = False) -> None:
    global _language, _by_flag
    _language = language if language in LANGUAGES else "en"
    _by_flag = by_flag


def set_one_edition(one: bool) -> None:
    global _one_edition
    _one_edition = one


def chosen_by_flag() -> bool:
    """Whether the language came from --lang (so a command we print must repeat it)."""
    return _by_flag


def language() -> str:
    return _language


def tr(template: str, **fields) -> str:
    """`template` in the chosen language, its {fields} filled in."""
    text = ZH.get(template, template) if _language == "zh" else template
    return text.format(**fields)


def doc(path: str) -> str:
    """A README.md or NOTES.md path as the chosen edition names it (README.zh.md in zh)."""
    if (_language == "zh" and not _one_edition and path.endswith(".md")
            and not path.endswith(".zh.md")):
        return path[:-3] + ".zh.md"
    return path


def title(lesson) -> str:
    return (lesson.title_zh or lesson.title) if _language == "zh" else lesson.title


# argparse's own words (usage, the options heading, its errors), in Chinese when asked:
# argparse looks each up through its module-level `_` at the moment it prints.
ARGPARSE_ZH = {
    "usage: ": "用法：",
    "positional arguments": "位置参数",
    "options": "选项",
    "show this help message and exit": "显示此帮助信息并退出",
    "%(prog)s: error: %(message)s\n": "%(prog)s：错误：%(message)s\n",
    "the following arguments are required: %s": "缺少以下参数：%s",
    "unrecognized arguments: %s": "无法识别的参数：%s",
    "invalid choice: %(value)r (choose from %(choices)s)": "无效的选择：%(value)r（可选：%(choices)s）",
    "invalid %(type)s value: %(value)r": "无效的 %(type)s 值：%(value)r",
    "expected one argument": "需要一个参数",
    "argument %(argument_name)s: %(message)s": "参数 %(argument_name)s：%(message)s",
    "ambiguous option: %(option)s could match %(matches)s": "有歧义的选项：%(option)s 可匹配 %(matches)s",
}


# The tests' skip reasons (GTEST_SKIP), by their English beginning: `check` shows them.
SKIP_REASONS_ZH = {
    "cuobjdump not found: SASS checks need it": "找不到 cuobjdump：SASS 检查需要它",
    "the build has no sm_90 target": "这次构建没有 sm_90 目标",
    "the build has no sm_90 code": "这次构建没有 sm_90 代码",
    "the build has no sm_80 target": "这次构建没有 sm_80 目标",
    "the build has no sm_80 code": "这次构建没有 sm_80 代码",
    "this GPU does not support cudaHostRegister": "这块 GPU 不支持 cudaHostRegister",
    "needs two GPUs": "需要两块 GPU",
    "no peer access": "没有对等访问（peer access）",
    "no usable GPU": "没有可用的 GPU",
}


def skip_reason(reason: str) -> str:
    """A test's skip reason in the chosen language (what follows a known beginning is kept)."""
    if _language != "zh":
        return reason
    for english, chinese in SKIP_REASONS_ZH.items():
        if reason.startswith(english):
            return chinese + reason[len(english):]
    return reason


def install_argparse_words() -> None:
    """Makes argparse speak the chosen language (its messages pass through argparse._)."""
    import argparse
    from gettext import gettext

    argparse._ = lambda text: ARGPARSE_ZH.get(text, text) if _language == "zh" else gettext(text)


def language_in_argv(argv: list[str]) -> str | None:
    """The value of --lang (`--lang zh` or `--lang=zh`) in `argv`, before argparse reads it:
    the help and the usage errors are written in the language it names."""
    for i, word in enumerate(argv):
        if word == "--lang" and i + 1 < len(argv):
            return argv[i + 1]
        if word.startswith("--lang="):
            return word.split("=", 1)[1]
    return None


# `list`'s legend of the needs column (a constant: tr() takes it whole).
ARCHITECTURE_LEGEND = """\
needs: sm_80+ is for Ampere (sm_80, sm_86), Ada (sm_89), Hopper (sm_90) and Blackwell (sm_100,
  sm_120); sm_90+ (TMA, mbarrier transactions) for Hopper and Blackwell. CI compiles every
  lesson for all of them; the results in docs/results were measured on H100 and H200 GPUs
  (none yet on Blackwell: build for it with
  cmake --preset student -DCMAKE_CUDA_ARCHITECTURES=100, or 120).
  Without a GPU, every lesson builds and `./course check NN` runs its CPU tests (the models,
  fits, PTX and SASS checks)."""

ZH = {
    # list
    "GPU: {message}": "GPU：{message}",
    "GPU: none ({message})": "GPU：无（{message}）",
    "GPU: unknown, the probe is not built yet (cmake --preset student && "
    "cmake --build --preset student --target course_gpu_probe)":
        "GPU：未知，探测程序尚未构建（cmake --preset student && "
        "cmake --build --preset student --target course_gpu_probe）",
    "GPU: unknown ({message})": "GPU：未知（{message}）",
    "title": "标题",
    "min": "分钟",
    "needs": "架构",
    "status": "状态",
    "last check": "上次检查",
    "ready": "就绪",
    "planned": "计划中",
    "yes": "是",
    "no": "否",
    "no GPU": "无 GPU",
    "pass": "通过",
    "fail": "未通过",
    "skipped": "跳过",
    "  (needs {count} GPUs)": "  （需要 {count} 块 GPU）",
    "  (not built: {reason})": "  （未构建：{reason}）",
    ARCHITECTURE_LEGEND:
        "架构：sm_80+ 适用于 Ampere（sm_80、sm_86）、Ada（sm_89）、Hopper（sm_90）和 Blackwell\n"
        "  （sm_100、sm_120）；sm_90+（TMA、mbarrier 事务计数）适用于 Hopper 和 Blackwell。CI 为\n"
        "  以上所有架构编译每一课；docs/results 中的结果在 H100 和 H200 GPU 上测得（Blackwell 上\n"
        "  尚无结果：可用 cmake --preset student -DCMAKE_CUDA_ARCHITECTURES=100 或 120 为它构建）。\n"
        "  没有 GPU 时，每一课照样能构建，`./course check NN` 会运行它的 CPU 测试（模型、拟合、\n"
        "  PTX 与 SASS 检查）。",
    "Start a lesson: read {readme}, then `./course run NN` and `./course check NN`.":
        "开始一课：先读 {readme}，再运行 `./course run NN` 和 `./course check NN`。",
    # check
    "compare your code with the solution: ./course diff {number}":
        "把你的代码与参考答案对比：./course diff {number}",
    "read {notes}": "阅读 {notes}",
    "that was the last lesson: well done": "这是最后一课：做得好",
    "next lesson: {number} {title} ({readme}, ./course run {number})":
        "下一课：{number} {title}（{readme}，./course run {number}）",
    "next lesson: {number} {title} (planned, not built yet)":
        "下一课：{number} {title}（计划中，尚未构建）",
    "fix the first compiler error above (in {file}?)":
        "先修正上面的第一个编译错误（在 {file} 中？）",
    "fix the first compiler error above": "先修正上面的第一个编译错误",
    "ctest wrote no readable results to {junit} (exit code {code}).":
        "ctest 没有在 {junit} 写下可读的结果（退出码 {code}）。",
    "ctest found no tests named L{number}.lesson.*: was {target} built?":
        "ctest 没有找到名为 L{number}.lesson.* 的测试：{target} 构建了吗？",
    "{passed} passed, {failed} failed, {skipped} skipped":
        "{passed} 个通过，{failed} 个失败，{skipped} 个跳过",
    "Lesson {number} is not done yet: {counts}.": "第 {number} 课还没有完成：{counts}。",
    "Failed tests:": "失败的测试：",
    "   (most likely TODO {todos})": "   （最可能是 TODO {todos}）",
    "Look first at TODO {todos} of {file}.": "先看 {file} 的 TODO {todos}。",
    "ctest exited with {code}; see its output above.": "ctest 的退出码是 {code}；见上面的输出。",
    "Not verified on this machine ({count} tests need a GPU, and so do the race checks): {todos}.":
        "本机未能验证（{count} 个测试需要 GPU，竞争检查也需要）：{todos}。",
    "Next:": "接下来：",
    "  read {readme}": "  阅读 {readme}",
    "  the TODOs in {file}": "  {file} 中的各个 TODO",
    "Lesson {number} is NOT verified: {counts}.": "第 {number} 课未经验证：{counts}。",
    "{count} tests skipped because no usable CUDA GPU was found":
        "{count} 个测试被跳过，因为没有找到可用的 CUDA GPU",
    "(no device, or one below compute capability {min_cc}), and the race":
        "（没有设备，或设备的计算能力低于 {min_cc}），而竞争",
    "and synchronisation checks need one too. Unverified on this machine: {todos}.":
        "与同步检查同样需要 GPU。本机未验证：{todos}。",
    "Run `./course check {number}` on a machine with a GPU to verify your work.":
        "请在有 GPU 的机器上运行 `./course check {number}` 来验证你的代码。",
    "Lesson {number} passes: {counts}; racecheck, synccheck and memcheck are clean.":
        "第 {number} 课通过：{counts}；racecheck、synccheck 和 memcheck 均无报告。",
    "Skipped, so not verified ({count}):": "被跳过、因而未验证的测试（{count} 个）：",
    "no reason printed": "没有给出原因",
    "  The SASS checks (and the README's recipes) need cuobjdump:":
        "  SASS 检查（以及 README 中的做法）需要 cuobjdump：",
    "TODO {todos} of {file}": "{file} 的 TODO {todos}",
    "every TODO of lessons/{name}": "lessons/{name} 的每个 TODO",
    "Lesson {number}: the tests pass, but compute-sanitizer was not found, so":
        "第 {number} 课：测试通过，但没有找到 compute-sanitizer，因此",
    "races and barrier misuse are NOT verified: {todos}.": "数据竞争与屏障误用未经验证：{todos}。",
    "\n--- {tool}: your program under compute-sanitizer":
        "\n--- {tool}：在 compute-sanitizer 下运行你的程序",
    "{tool} could not run the program here (no suitable GPU).":
        "{tool} 无法在这里运行程序（没有合适的 GPU）。",
    "\nLesson {number} is not done yet: the tests pass, but {tool} found a problem in your "
    "program (the first report is above).":
        "\n第 {number} 课还没有完成：测试通过了，但 {tool} 在你的程序中发现了问题（第一条报告见上）。",
    "A value test can pass by luck when a wait or a barrier is missing; this check":
        "缺少等待或屏障时，数值测试可能碰巧通过；这项检查",
    "cannot. Look at the waits, barriers and releases of {file}.":
        "不会。请检查 {file} 中的等待、屏障和释放。",
    # hint
    "Lesson {number} has no hints. Its README's pitfalls section may help.":
        "第 {number} 课没有提示。README 中的常见错误一节或许有帮助。",
    "Every TODO of lesson {number} is written and no failure of your last check names one. "
    "Run ./course check {number}, or ask for a TODO's hints: ./course hint {number} --todo K "
    "(K: {todos}).":
        "第 {number} 课的每个 TODO 都已写好，你上次检查的失败也没有指向任何一个。请运行 "
        "./course check {number}，或查看某个 TODO 的提示：./course hint {number} --todo K"
        "（K：{todos}）。",
    "lesson {number} has TODOs {todos}: ask for one of them":
        "第 {number} 课的 TODO 是 {todos}：请指定其中一个",
    "TODO {todo} of lesson {number} has {count} hints: ask for one of 1 to {count}":
        "第 {number} 课的 TODO {todo} 有 {count} 级提示：请指定 1 到 {count} 之间的一级",
    "Hint {k} of {count} for TODO {todo} of lesson {number} ({title}):":
        "第 {number} 课（{title}）TODO {todo} 的提示 {k}/{count}：",
    "(Stuck after trying it? `{command}` shows the next one.)":
        "（试过之后仍卡住？`{command}` 显示下一级。）",
    "(That was the last hint of TODO {todo} in this handout.)":
        "（这是这份学生版仓库中 TODO {todo} 的最后一级提示。）",
    "This handout has no hints (your instructor's choice): {readme} teaches what "
    "each TODO needs.":
        "这份学生版仓库不提供提示（这是你的老师的选择）：{readme} 讲授了每个 TODO 所需的内容。",
    "this folder is a handout of the course: it has no solutions, so "
    "`./course {command}` cannot run here. Your instructor has them.":
        "这个文件夹是分发给学生的课程仓库（handout）：其中没有参考答案，所以 `./course {command}` "
        "不能在这里运行。"
        "参考答案在你的老师那里。",
    "(That was the last hint of TODO {todo}: its code.)":
        "（这是 TODO {todo} 的最后一级提示：它的代码。）",
    "course: error: {message}": "course：错误：{message}",
    "{command}   (the next hint for TODO {todo})": "{command}   （TODO {todo} 的下一级提示）",
    # the command line (--help, usage errors)
    "Work through the CUDA asynchronous data movement course.": "逐课学习 CUDA 异步数据搬运。",
    "A lesson is named by its number or slug: 1, 01, 01_register_staged or "
    "register_staged. Arguments after `--` go to the program that `run` or "
    "`tour` starts. Typical loop: ./course list; ./course run 01; ./course check 01; "
    "./course hint 01; ./course diff 01. Passing flags to a lesson program: "
    "./course run 03 -- --quick; ./course run 06 --solution -- --stages 6 --csv out.csv.":
        "课程用编号或名称指定：1、01、01_register_staged 或 register_staged。`--` 之后的参数交给 "
        "`run` 或 `tour` 启动的程序。常用流程：./course list；./course run 01；./course check 01；"
        "./course hint 01；./course diff 01。给课程程序传参数：./course run 03 -- --quick；"
        "./course run 06 --solution -- --stages 6 --csv out.csv。",
    "the language of the messages, lesson titles and hints: en (the default) "
    "or zh (Chinese); also COURSE_LANG=zh or a zh_* locale":
        "消息、课程标题和提示的语言：en（默认）或 zh（中文）；也可用 COURSE_LANG=zh 或 zh_* 区域设置",
    "list the lessons, whether this GPU can run them, and your last check":
        "列出各课、这块 GPU 能否运行它们，以及你上次检查的结果",
    "build and run a lesson's program (your starter, or --solution)":
        "构建并运行一课的程序（你的起始代码，或 --solution）",
    "lesson number or slug": "课程编号或名称",
    "run the reference solution instead": "改为运行参考答案",
    "build and run a lesson's tests against your code": "构建一课的测试并用它们检查你的代码",
    "show the next hint for the first TODO you have not finished "
    "(or that your last check failed), one rung at a time; or for "
    "TODO K":
        "为你尚未完成（或上次检查失败）的第一个 TODO 显示下一级提示，一次一级；或为 TODO K 显示",
    "which rung of the ladder (1, 2, ...)": "提示的第几级（1、2、……）",
    "the TODO whose hints to show": "要显示其提示的 TODO",
    "show how your lesson files differ from the solution": "显示你的课程文件与答案的差别",
    "restore a lesson's starter files (yours are kept as .bak)":
        "恢复一课的起始文件（你的文件保存为 .bak）",
    "build everything and run every ready lesson's solution": "构建全部内容并运行每个就绪课程的答案",
    # building (run, check)
    "cannot run {program}: not found": "无法运行 {program}：找不到该程序",
    "cmake --preset {preset} failed (see above)": "cmake --preset {preset} 失败（见上文）",
    "target {target}": "目标 {target}",
    "the lessons' programs": "各课的程序",
    "the project": "整个项目",
    "building {what} failed: {advice}": "构建 {what} 失败：{advice}",
    "read the first error above": "先看上面的第一个错误",
    # lessons named on the command line (run, check, hint)
    "unknown lesson {text}; the lessons are: {known}": "没有这一课：{text}；现有的课程：{known}",
    "lesson {number} ({title}) is planned but not built yet; "
    "`./course list` shows the lessons that are ready":
        "第 {number} 课（{title}）在计划中，尚未构建；`./course list` 列出已就绪的课程",
}
