// Each script is a fixed template (the shell logic: where the word being
// completed stands) with the generated parts filled in: option spellings,
// what their values complete to, subcommands, store actions, shells. The
// shell code walks the words typed so far the way cli.cpp parses them: a
// first word naming a subcommand is one; options and their values; then "--"
// or the first other word is the program; every word after it is the
// program's own.
#include "config/completion.hpp"

#include "util/strings.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace gangrun::config {

namespace {

struct Described {
  std::string_view name;
  std::string_view help;
};

constexpr std::array k_subcommands = {
    Described{"devices", "list the accelerators and the masks a launch would give"},
    Described{"store", "operate a TCP store"},
    Described{"completion", "print a shell completion script"},
};

constexpr std::array k_store_actions = {
    Described{"serve", "run a store server until SIGINT or SIGTERM"},
    Described{"get", "print a key's value"},
    Described{"set", "set a key to a value"},
    Described{"add", "add to a counter key"},
    Described{"wait", "wait until every key is set"},
    Described{"check", "exit 0 if every key is set"},
    Described{"delete", "delete a key"},
    Described{"keys", "print every key"},
    Described{"num-keys", "print how many keys the store holds"},
};

// One option as every shell completes it.
struct Completable {
  std::vector<std::string> longs;  // "--nproc_per_node", "--nproc-per-node", ...
  std::string short_flag;          // "-n", or empty
  bool takes_value = false;
  bool repeatable = false;
  std::vector<std::string_view> values;  // offered for the value
  ValueHint hint = ValueHint::none;
  std::string metavar;
  std::string summary;

  std::vector<std::string> spellings() const {
    std::vector<std::string> all = longs;
    if (!short_flag.empty()) all.push_back(short_flag);
    return all;
  }
  // Something to offer for the value, beyond "type it".
  bool completes_value() const { return !values.empty() || hint != ValueHint::none; }
};

// The first clause of a help text, for the one-line descriptions of zsh and
// fish: up to ". ", "; " or ", e.g. " outside parentheses, or ": " once the
// clause has a few words ("shared: every worker ..." keeps its "shared:").
std::string summary(std::string_view help) {
  int depth = 0;
  std::size_t words = 1;
  for (std::size_t i = 0; i < help.size(); ++i) {
    const std::string_view rest = help.substr(i);
    if (help[i] == '(') ++depth;
    if (help[i] == ')' && depth > 0) --depth;
    if (help[i] == ' ') ++words;
    if (depth > 0) continue;
    if (rest.starts_with(". ") || rest.starts_with("; ") || rest.starts_with(", e.g. ") ||
        (rest.starts_with(": ") && words >= 3)) {
      return std::string(help.substr(0, i));
    }
  }
  return std::string(help.ends_with('.') ? help.substr(0, help.size() - 1) : help);
}

std::vector<Completable> launch_options() {
  std::vector<Completable> out;
  for (const OptionSpec& spec : option_table()) {
    Completable option;
    for (const std::string& spelling : long_spellings(spec)) {
      option.longs.push_back("--" + spelling);
    }
    if (spec.short_name != 0) option.short_flag = std::string("-") + spec.short_name;
    option.takes_value = spec.kind == OptionKind::value;
    option.repeatable = spec.kind == OptionKind::counter;
    option.values = spec.choices.empty() ? spec.suggestions : spec.choices;
    option.hint = spec.value_hint;
    option.metavar = std::string(spec.metavar);
    option.summary = summary(spec.help);
    out.push_back(std::move(option));
  }
  return out;
}

// CLI11's -h/--help, which every store command has.
Completable store_help() {
  Completable help;
  help.longs = {"--help"};
  help.short_flag = "-h";
  help.summary = "print help and exit";
  return help;
}

std::vector<Completable> store_options(bool serve) {
  std::vector<Completable> out;
  for (const StoreOptionWord& word : store_option_words()) {
    if (word.serve != serve) continue;
    Completable option;
    option.longs.push_back("--" + std::string(word.name));
    if (std::string snake = snake_case(word.name); snake != word.name) {
      option.longs.push_back("--" + snake);
    }
    option.takes_value = !word.metavar.empty();
    option.values = word.choices;
    option.hint = word.value_hint;
    option.metavar = std::string(word.metavar);
    option.summary = std::string(word.help);
    out.push_back(std::move(option));
  }
  out.push_back(store_help());
  return out;
}

std::vector<Completable> all_store_options() {
  std::vector<Completable> out = store_options(false);
  std::vector<Completable> serve = store_options(true);
  out.insert(out.end(), serve.begin(), serve.end() - 1);  // one --help
  return out;
}

template <typename Range>
std::vector<std::string> names_of(const Range& described) {
  std::vector<std::string> names;
  for (const Described& each : described) names.emplace_back(each.name);
  return names;
}

std::vector<std::string> shells() {
  return std::vector<std::string>(shell_names().begin(), shell_names().end());
}

// Replaces each "@KEY@" of the template.
std::string fill(std::string_view text,
                 const std::vector<std::pair<std::string_view, std::string>>& parts) {
  std::string out(text);
  for (const auto& [key, value] : parts) {
    const std::string marker = "@" + std::string(key) + "@";
    for (std::size_t at = out.find(marker); at != std::string::npos;
         at = out.find(marker, at + value.size())) {
      out.replace(at, marker.size(), value);
    }
  }
  return out;
}

// Words joined by separator into lines of at most k_width columns, the first
// starting at first_column; every line but the last ends with line_end, and
// every line but the first starts with indent.
constexpr std::size_t k_width = 96;
std::string wrap_words(const std::vector<std::string>& words, std::string_view separator,
                       std::string_view line_end, std::string_view indent,
                       std::size_t first_column) {
  std::string out;
  std::size_t column = first_column;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) {
      if (column + separator.size() + words[i].size() + line_end.size() > k_width) {
        out += std::string(line_end) + "\n" + std::string(indent);
        column = indent.size();
        std::string_view trimmed = strings::trim(separator);
        if (!trimmed.empty()) {  // "| " continues a case pattern on the next line
          out += std::string(trimmed) + " ";
          column += trimmed.size() + 1;
        }
      } else {
        out += separator;
        column += separator.size();
      }
    }
    out += words[i];
    column += words[i].size();
  }
  return out;
}

std::vector<std::string> strings_of(const std::vector<std::string_view>& views) {
  return std::vector<std::string>(views.begin(), views.end());
}

// ---- bash --------------------------------------------------------------------

constexpr std::string_view k_bash =
    R"script(# bash completion for gangrun                                -*- shell-script -*-
# Generated by `gangrun completion bash` from gangrun's option table; do not edit.
# Install: copy to /usr/share/bash-completion/completions/gangrun (or to
# ~/.local/share/bash-completion/completions/gangrun), or run
#   source <(gangrun completion bash)
# Needs the bash-completion package (_init_completion, _filedir).

# The program: Python files, directories and commands (executable files when
# the word holds a "/").
_gangrun_program()
{
    mapfile -t -O ${#COMPREPLY[@]} COMPREPLY < <(compgen -c -- "$cur")
    _filedir py
}

# The value of the launch option spelled $1.
_gangrun_value()
{
    case $1 in
@VALUE_CASES@
    esac
}

# gangrun store [CLIENT OPTIONS] ACTION [OPTIONS] [KEY...]; words[$1] is the
# first word after "store".
_gangrun_store()
{
    local i value_of= action=
    for ((i = $1; i < cword; i++)); do
        case ${words[i]} in
            @STORE_VALUE_OPTIONS@)
                ((i + 1 == cword)) && value_of=${words[i]}
                ((i++))
                ;;
            -*) ;;
            *) [[ $action ]] || action=${words[i]} ;;
        esac
    done
    [[ $split == true ]] && value_of=$prev  # --option=VALUE
    if [[ $value_of ]]; then
        case $value_of in
@STORE_VALUE_CASES@
        esac
    elif [[ $cur == -* ]]; then
        local options
        if [[ $action == serve ]]; then
            options='@STORE_SERVE_OPTIONS@'
        else
            options='@STORE_CLIENT_OPTIONS@'
        fi
        COMPREPLY=($(compgen -W "$options" -- "$cur"))
    elif [[ -z $action ]]; then
        COMPREPLY=($(compgen -W '@STORE_ACTIONS@' -- "$cur"))
    fi
}

_gangrun()
{
    local cur prev words cword split
    _init_completion -s || return

    local i=1 mode=launch
    if ((cword > 1)); then
        case ${words[1]} in
            @SUBCOMMAND_PATTERN@) mode=${words[1]} i=2 ;;
        esac
    fi
    case $mode in
        completion)
            ((cword == 2)) && COMPREPLY=($(compgen -W '@SHELLS@' -- "$cur"))
            return
            ;;
        store)
            _gangrun_store $i
            return
            ;;
    esac

    # Options (a value may follow as the next word), then "--" or the program,
    # then the program's own arguments.
    local state=options value_of=
    for ((; i < cword; i++)); do
        case $state in
            options)
                case ${words[i]} in
                    --) state=program ;;
                    @VALUE_OPTIONS@)
                        ((i + 1 == cword)) && value_of=${words[i]}
                        ((i++))
                        ;;
                    -*) ;;
                    *) [[ $mode == launch ]] && state=arguments ;;
                esac
                ;;
            program) state=arguments ;;
        esac
    done
    [[ $split == true ]] && value_of=$prev  # --option=VALUE
    if [[ $value_of ]]; then
        _gangrun_value "$value_of"
        return
    fi
    case $state in
        arguments) _filedir ;;
        program) _gangrun_program ;;
        *)
            if [[ $cur == -* ]]; then
                local options='@OPTIONS@'
                COMPREPLY=($(compgen -W "$options" -- "$cur"))
            elif [[ $mode == launch ]]; then
                ((cword == 1)) && COMPREPLY=($(compgen -W '@SUBCOMMANDS@' -- "$cur"))
                _gangrun_program
            fi
            ;;
    esac
} &&
    complete -F _gangrun gangrun

# ex: filetype=sh
)script";

std::string bash_value_action(const Completable& option) {
  if (!option.values.empty()) {
    return "COMPREPLY=($(compgen -W '" + strings::join(strings_of(option.values), " ") +
           "' -- \"$cur\"))";
  }
  switch (option.hint) {
    case ValueHint::file:
      return "_filedir";
    case ValueHint::directory:
      return "_filedir -d";
    case ValueHint::command:
      return "mapfile -t COMPREPLY < <(compgen -c -- \"$cur\")";
    case ValueHint::none:
      break;
  }
  return ":";
}

// A case branch "--a | --b)", its action and ";;" for each option whose value
// completes to something.
std::string bash_value_cases(const std::vector<Completable>& options, std::string_view indent) {
  std::string out;
  for (const Completable& option : options) {
    if (!option.takes_value || !option.completes_value()) continue;
    std::string pattern =
        wrap_words(option.spellings(), " | ", " \\", std::string(indent) + "  ", indent.size());
    out += std::string(indent) + pattern + ")\n" + std::string(indent) + "    " +
           bash_value_action(option) + "\n" + std::string(indent) + "    ;;\n";
  }
  if (!out.empty()) out.pop_back();
  return out;
}

std::vector<std::string> value_spellings(const std::vector<Completable>& options) {
  std::vector<std::string> out;
  for (const Completable& option : options) {
    if (!option.takes_value) continue;
    for (const std::string& spelling : option.spellings()) out.push_back(spelling);
  }
  return out;
}

std::vector<std::string> every_spelling(const std::vector<Completable>& options) {
  std::vector<std::string> out;
  for (const Completable& option : options) {
    for (const std::string& spelling : option.spellings()) out.push_back(spelling);
  }
  return out;
}

std::string bash_script() {
  const std::vector<Completable> launch = launch_options();
  const std::vector<Completable> store = all_store_options();
  return fill(
      k_bash,
      {
          {"VALUE_CASES", bash_value_cases(launch, "        ")},
          {"VALUE_OPTIONS",
           wrap_words(value_spellings(launch), " | ", " \\", std::string(20, ' '), 20)},
          {"OPTIONS", wrap_words(every_spelling(launch), " ", "", std::string(16, ' '), 31)},
          {"SUBCOMMANDS", strings::join(names_of(k_subcommands), " ")},
          {"SUBCOMMAND_PATTERN", strings::join(names_of(k_subcommands), " | ")},
          {"SHELLS", strings::join(shells(), " ")},
          {"STORE_VALUE_OPTIONS",
           wrap_words(value_spellings(store), " | ", " \\", std::string(12, ' '), 12)},
          {"STORE_VALUE_CASES", bash_value_cases(store, "            ")},
          {"STORE_CLIENT_OPTIONS",
           wrap_words(every_spelling(store_options(false)), " ", "", std::string(12, ' '), 21)},
          {"STORE_SERVE_OPTIONS",
           wrap_words(every_spelling(store_options(true)), " ", "", std::string(12, ' '), 21)},
          {"STORE_ACTIONS", strings::join(names_of(k_store_actions), " ")},
      });
}

// ---- zsh ---------------------------------------------------------------------

constexpr std::string_view k_zsh = R"script(#compdef gangrun
# zsh completion for gangrun, generated by `gangrun completion zsh` from gangrun's
# option table; do not edit. Install: save as _gangrun in a directory on $fpath
# before compinit runs, or, after compinit, run
#   source <(gangrun completion zsh)

# The words that name a subcommand or a store action.
_gangrun_subcommands() {
  local -a subcommands=(
@SUBCOMMANDS@
  )
  _describe -t subcommands 'gangrun subcommand' subcommands
}

_gangrun_store_actions() {
  local -a actions=(
@STORE_ACTIONS@
  )
  _describe -t store-actions 'store action' actions
}

# A command, or with a "/" in the word, an executable file or a directory.
# _path_files, not _files: where no file matches, _files offers every file.
_gangrun_command() {
  if [[ $PREFIX == */* ]]; then
    _alternative 'executables:executable file:_path_files -g "*(-*)"' \
      'directories:directory:_path_files -/'
  else
    _command_names -e
  fi
}

# The program: Python files, directories and commands; as the first word, a
# subcommand too (after "--" it is always a program).
_gangrun_program() {
  local -a alternatives=(
    'python-files:Python file:_path_files -g "*.py(-.)"'
    'directories:directory:_path_files -/'
    'commands:command:_gangrun_command'
  )
  (( CURRENT == 2 )) && alternatives=('subcommands:subcommand:_gangrun_subcommands' $alternatives)
  _alternative $alternatives
}

# gangrun store [CLIENT OPTIONS] ACTION [OPTIONS] [KEY...]
_gangrun_store() {
  local curcontext=$curcontext state state_descr line ret=1
  local -a client=(
@STORE_CLIENT_SPECS@
  )
  local -a serve=(
@STORE_SERVE_SPECS@
  )
  _arguments -C -s : $client \
    '1:store action:_gangrun_store_actions' \
    '*::store argument:->action' && ret=0
  if [[ $state == action ]]; then
    case $words[1] in
      (serve) _arguments -s : $serve && ret=0 ;;
      (*) _arguments -s : $client '*:key: ' && ret=0 ;;
    esac
  fi
  return ret
}

_gangrun() {
  local -a options=(
@OPTION_SPECS@
  )
  if (( CURRENT > 2 )); then
    case $words[2] in
      (devices)
        shift words
        (( CURRENT-- ))
        _arguments -s -S : $options
        return
        ;;
      (store)
        shift words
        (( CURRENT-- ))
        _gangrun_store
        return
        ;;
      (completion)
        local expl
        (( CURRENT == 3 )) && _wanted shells expl shell compadd -- @SHELLS@
        return
        ;;
    esac
  fi
  _arguments -s -S : $options \
    '(-)1:program:_gangrun_program' \
    '*::program argument:_default'
}

if [[ $funcstack[1] == _gangrun ]]; then
  _gangrun "$@"
else
  compdef _gangrun gangrun
fi
)script";

// text inside a single-quoted zsh word, escaping also the characters in `special`
// with a backslash for _arguments.
std::string zsh_quoted_part(std::string_view text, std::string_view special) {
  std::string out;
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
      continue;
    }
    if (c == '\\' || special.find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

std::string zsh_value_action(const Completable& option) {
  if (!option.values.empty()) {
    return "(" + strings::join(strings_of(option.values), " ") + ")";
  }
  switch (option.hint) {
    case ValueHint::file:
      return "_files";
    case ValueHint::directory:
      return "_path_files -/";  // _files -/ offers files where there is no directory
    case ValueHint::command:
      return "_gangrun_command";
    case ValueHint::none:
      break;
  }
  return " ";  // a value is needed, but nothing can be offered
}

// One _arguments spec per spelling: '(all spellings)--name=[summary]:METAVAR:action'.
std::string zsh_specs(const std::vector<Completable>& options) {
  std::string out;
  for (const Completable& option : options) {
    const std::vector<std::string> spellings = option.spellings();
    const std::string exclusions =
        option.repeatable ? "*" : "(" + strings::join(spellings, " ") + ")";
    const std::string description = "[" + zsh_quoted_part(option.summary, "[]") + "]";
    for (const std::string& spelling : spellings) {
      std::string spec = exclusions + spelling;
      if (option.takes_value) spec += spelling.starts_with("--") ? "=" : "+";
      spec += description;
      if (option.takes_value) {
        spec += ":" + zsh_quoted_part(option.metavar, ":") + ":" + zsh_value_action(option);
      }
      out += "    '" + spec + "'\n";
    }
  }
  if (!out.empty()) out.pop_back();
  return out;
}

template <typename Range>
std::string zsh_described(const Range& described) {
  std::string out;
  for (const Described& each : described) {
    out += "    '" + std::string(each.name) + ":" + zsh_quoted_part(each.help, "") + "'\n";
  }
  if (!out.empty()) out.pop_back();
  return out;
}

std::string zsh_script() {
  return fill(k_zsh, {
                         {"SUBCOMMANDS", zsh_described(k_subcommands)},
                         {"STORE_ACTIONS", zsh_described(k_store_actions)},
                         {"STORE_CLIENT_SPECS", zsh_specs(store_options(false))},
                         {"STORE_SERVE_SPECS", zsh_specs(store_options(true))},
                         {"OPTION_SPECS", zsh_specs(launch_options())},
                         {"SHELLS", strings::join(shells(), " ")},
                     });
}

// ---- fish --------------------------------------------------------------------

constexpr std::string_view k_fish =
    R"script(# fish completion for gangrun, generated by `gangrun completion fish` from gangrun's
# option table; do not edit. Install: copy to ~/.config/fish/completions/gangrun.fish
# (or to /usr/share/fish/vendor_completions.d/), or run
#   gangrun completion fish | source

# Where the word being completed stands: first (the word after gangrun),
# options, value (of a launch option), program, arguments (the program's own),
# devices (gangrun devices), shell (gangrun completion), store-action,
# store-client, store-serve, store-value (gangrun store), done.
function __gangrun_where
    set -l words (commandline -opc)
    set -e words[1]
    if not set -q words[1]
        echo first
        return
    end
    set -l mode launch
    if contains -- $words[1] @SUBCOMMANDS@
        set mode $words[1]
        set -e words[1]
    end
    switch $mode
        case completion
            if set -q words[1]
                echo done
            else
                echo shell
            end
            return
        case store
            __gangrun_store_where $words
            return
    end
    set -l state options
    set -l value_next 0
    for word in $words
        if test $value_next = 1
            set value_next 0
            continue
        end
        switch $state
            case options
                if test "$word" = --
                    set state program
                else if contains -- $word @VALUE_OPTIONS@
                    set value_next 1
                else if not string match -q -- '-*' $word
                    test $mode = launch; and set state arguments
                end
            case program
                set state arguments
        end
    end
    if test $value_next = 1
        echo value
    else if test $mode = devices
        echo devices
    else
        echo $state
    end
end

function __gangrun_store_where
    set -l action
    set -l value_next 0
    for word in $argv
        if test $value_next = 1
            set value_next 0
        else if contains -- $word @STORE_VALUE_OPTIONS@
            set value_next 1
        else if not string match -q -- '-*' $word; and not set -q action[1]
            set action $word
        end
    end
    if test $value_next = 1
        echo store-value
    else if not set -q action[1]
        echo store-action
    else if test $action = serve
        echo store-serve
    else
        echo store-client
    end
end

function __gangrun_at --description 'Whether the word being completed stands at one of the places given'
    contains -- (__gangrun_where) $argv
end

# The program: Python files, directories and commands.
function __gangrun_programs
    set -l token (commandline -ct)
    string match -q -- '-*' $token; and return
    # File completion, as fish gives it to a command without completions of its own.
    complete -C"__gangrun_no_such_command $token" | string match -r -- '^[^\t]*(\.py|/)(\t.*)?$'
    __fish_complete_command
end

# Directories, for "--option DIR" and "--option=DIR" alike.
function __gangrun_directories
    set -l token (commandline -ct)
    string match -q -- '-*=*' $token; and set token (string replace -r -- '^[^=]*=' '' $token)
    __fish_complete_directories $token
end

complete -c gangrun -n '__gangrun_at devices shell done store-action store-client store-serve' -f
complete -c gangrun -n '__gangrun_at first options program' -f -a '(__gangrun_programs)'
@SUBCOMMANDS_LINES@
complete -c gangrun -n '__gangrun_at shell' -f -a '@SHELLS@'
@STORE_ACTIONS_LINES@

# Launch options (and gangrun devices)
@OPTION_LINES@

# gangrun store: client options, before or after the action
@STORE_CLIENT_LINES@

# gangrun store serve
@STORE_SERVE_LINES@
)script";

// text in single quotes for fish.
std::string fish_quoted(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  return out + "'";
}

std::string fish_value_flags(const Completable& option) {
  if (!option.values.empty()) {
    return " -x -a " + fish_quoted(strings::join(strings_of(option.values), " "));
  }
  switch (option.hint) {
    case ValueHint::file:
      return " -r -F";
    case ValueHint::directory:
      return " -x -a '(__gangrun_directories)'";
    case ValueHint::command:
      return " -x -a '(__fish_complete_command)'";
    case ValueHint::none:
      break;
  }
  return " -x";
}

std::string fish_option_lines(const std::vector<Completable>& options, std::string_view places) {
  std::string out;
  for (const Completable& option : options) {
    std::string line = "complete -c gangrun -n '__gangrun_at " + std::string(places) + "'";
    for (const std::string& spelling : option.longs) line += " -l " + spelling.substr(2);
    if (!option.short_flag.empty()) line += " -s " + option.short_flag.substr(1);
    if (option.takes_value) line += fish_value_flags(option);
    line += " -d " + fish_quoted(option.summary);
    out += line + "\n";
  }
  if (!out.empty()) out.pop_back();
  return out;
}

template <typename Range>
std::string fish_word_lines(const Range& described, std::string_view place) {
  std::string out;
  for (const Described& each : described) {
    out += "complete -c gangrun -n '__gangrun_at " + std::string(place) + "' -f -a " +
           std::string(each.name) + " -d " + fish_quoted(each.help) + "\n";
  }
  if (!out.empty()) out.pop_back();
  return out;
}

std::string fish_script() {
  const std::vector<Completable> launch = launch_options();
  return fill(
      k_fish,
      {
          {"SUBCOMMANDS", strings::join(names_of(k_subcommands), " ")},
          {"VALUE_OPTIONS",
           wrap_words(value_spellings(launch), " ", " \\", std::string(24, ' '), 41)},
          {"STORE_VALUE_OPTIONS",
           wrap_words(value_spellings(all_store_options()), " ", " \\", std::string(16, ' '), 33)},
          {"SUBCOMMANDS_LINES", fish_word_lines(k_subcommands, "first")},
          {"SHELLS", strings::join(shells(), " ")},
          {"STORE_ACTIONS_LINES", fish_word_lines(k_store_actions, "store-action")},
          {"OPTION_LINES", fish_option_lines(launch, "first options value devices")},
          {"STORE_CLIENT_LINES",
           fish_option_lines(store_options(false), "store-action store-client store-value")},
          {"STORE_SERVE_LINES", fish_option_lines(store_options(true), "store-serve store-value")},
      });
}

}  // namespace

const std::vector<std::string_view>& shell_names() {
  static const std::vector<std::string_view> names = {"bash", "zsh", "fish"};
  return names;
}

std::optional<Shell> parse_shell(std::string_view name) {
  if (name == "bash") return Shell::bash;
  if (name == "zsh") return Shell::zsh;
  if (name == "fish") return Shell::fish;
  return std::nullopt;
}

std::string completion_script(Shell shell) {
  switch (shell) {
    case Shell::bash:
      return bash_script();
    case Shell::zsh:
      return zsh_script();
    case Shell::fish:
      return fish_script();
  }
  return {};
}

const std::vector<std::string_view>& store_action_names() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> out;
    for (const Described& action : k_store_actions) out.push_back(action.name);
    return out;
  }();
  return names;
}

const std::vector<StoreOptionWord>& store_option_words() {
  static const std::vector<StoreOptionWord> words = {
      {.name = "endpoint", .metavar = "HOST:PORT", .help = "the store"},
      {.name = "timeout",
       .metavar = "SECONDS",
       .help = "limit for connecting and for each operation"},
      {.name = "dialect",
       .metavar = "DIALECT",
       .choices = {"validated", "legacy"},
       .help = "validated: PyTorch 2.x or gangrun's store, legacy: PyTorch 1.13's"},
      {.name = "raw-keys", .help = "send keys as typed, without the \"/\" PyTorch puts first"},
      {.name = "host", .metavar = "HOST", .serve = true, .help = "address or name to bind"},
      {.name = "port", .metavar = "PORT", .serve = true, .help = "port to listen on (0: any)"},
      {.name = "port-file",
       .metavar = "FILE",
       .value_hint = ValueHint::file,
       .serve = true,
       .help = "write the port listened on to FILE"},
      {.name = "max-key-bytes", .metavar = "N", .serve = true, .help = "longest key"},
      {.name = "max-value-bytes", .metavar = "N", .serve = true, .help = "longest value"},
      {.name = "max-keys-per-request",
       .metavar = "N",
       .serve = true,
       .help = "most keys in one request"},
      {.name = "max-store-bytes",
       .metavar = "N",
       .serve = true,
       .help = "most bytes of keys and values held"},
      {.name = "max-connections",
       .metavar = "N",
       .serve = true,
       .help = "most client connections at once"},
  };
  return words;
}

}  // namespace gangrun::config
