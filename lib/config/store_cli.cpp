// CLI11 only splits the words: every value arrives here as text and is
// checked below, so each message names the option as the user wrote it.
// The client options live on `store` itself and the subcommands fall through
// to it, so they are accepted before or after the subcommand, as etcdctl's
// global flags are.
#include "config/store_cli.hpp"

#include "store/default_port.hpp"
#include "util/strings.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <string_view>
#include <utility>

namespace gangrun::config {
namespace {

constexpr double k_longest_timeout_seconds = 365.0 * 24 * 3600;

constexpr std::string_view k_description =
    "Operate a TCP store that PyTorch's torch.distributed.TCPStore can use: serve one, or "
    "read and write keys of a running one from a shell script.";

std::string footer() {
  return "Keys: like PyTorch's TCPStore client, gangrun puts \"/\" before every key, so 'gangrun "
         "store get foo' reads what Python's store.set(\"foo\", ...) wrote; --raw-keys sends keys "
         "as typed.\n"
         "Endpoint: --endpoint, else GANGRUN_STORE_ENDPOINT, else MASTER_ADDR:MASTER_PORT, else "
         "127.0.0.1:" +
         std::to_string(store::k_default_port) +
         ".\n"
         "Exit status: 0 done; 1 check found a key missing, or delete found no key; 2 usage "
         "error; 3 the store could not be reached, timed out, or failed.";
}

constexpr std::string_view k_client_footer =
    "Client options (before or after the command; see gangrun store --help):\n"
    "  --endpoint HOST:PORT, --timeout SECONDS, --dialect validated|legacy, --raw-keys";

// Everything CLI11 collects, as the user typed it.
struct Words {
  // Each option of store_option_words() by name: its default_text until given.
  std::map<std::string_view, std::string> options;
  std::map<std::string_view, bool> flags;
  std::string key;
  std::vector<std::string> keys;
  std::string value;
  std::string delta;
  bool took_leftover = false;  // value or delta came from a word CLI11 left over
};

// The CLI11 objects whose presence matters after parsing.
struct Parsed {
  std::map<std::string_view, CLI::Option*> options;  // by store_option_words() name
  CLI::Option* value = nullptr;
  CLI::Option* delta = nullptr;
};

// "--max-key-bytes,--max_key_bytes": both spellings, as the launch options have.
std::string both_spellings(std::string_view dash_name) {
  std::string snake(dash_name);
  std::replace(snake.begin(), snake.end(), '-', '_');
  if (snake == dash_name) return "--" + snake;
  return "--" + std::string(dash_name) + ",--" + snake;
}

// One option of the table on `app` (the store itself, or serve), bound to its words.
void add_table_option(CLI::App& app, const StoreOptionWord& spec, Words& words, Parsed& parsed) {
  const std::string spellings = both_spellings(spec.name);
  const std::string help(spec.help);
  CLI::Option* option = nullptr;
  if (spec.metavar.empty()) {
    option = app.add_flag(spellings, words.flags[spec.name], help);
  } else {
    std::string& text = words.options[spec.name];
    text = std::string(spec.default_text);
    option = app.add_option(spellings, text, help);
    // A fixed set of values is shown as itself: "validated|legacy".
    std::vector<std::string> choices(spec.choices.begin(), spec.choices.end());
    option->type_name(choices.empty() ? std::string(spec.metavar) : strings::join(choices, "|"));
    if (!spec.default_text.empty()) option->default_str(std::string(spec.default_text));
  }
  if (!spec.serve) option->group("Client options (for every command but serve)");
  parsed.options[spec.name] = option;
}

// The arguments each action takes after its name.
void add_arguments(CLI::App& sub, StoreAction action, Words& words, Parsed& parsed) {
  auto key_argument = [&] {
    sub.add_option("KEY", words.key, "The key")->required()->type_name("");
  };
  switch (action) {
    case StoreAction::get:
    case StoreAction::delete_key:
      key_argument();
      break;
    case StoreAction::set:
      key_argument();
      parsed.value =
          sub.add_option("VALUE", words.value, "The value; default: standard input")->type_name("");
      break;
    case StoreAction::add:
      key_argument();
      parsed.delta =
          sub.add_option("DELTA", words.delta, "A whole number, default 1")->type_name("");
      break;
    case StoreAction::wait:
    case StoreAction::check:
      sub.add_option("KEY", words.keys, "The keys")->required()->type_name("");
      break;
    case StoreAction::help:
    case StoreAction::serve:
    case StoreAction::keys:
    case StoreAction::num_keys:
      break;
  }
}

void build_app(CLI::App& app, Words& words, Parsed& parsed) {
  app.description(std::string(k_description));
  app.require_subcommand(0, 1);
  app.allow_extras();  // take_leftovers() judges what CLI11 could not place
  for (const StoreOptionWord& spec : store_option_words()) {
    if (!spec.serve) add_table_option(app, spec, words, parsed);
  }
  for (const StoreActionSpec& spec : store_action_table()) {
    CLI::App* sub = app.add_subcommand(std::string(spec.name), std::string(spec.help));
    if (!spec.alias.empty()) sub->alias(std::string(spec.alias));
    if (spec.action == StoreAction::serve) {
      for (const StoreOptionWord& option : store_option_words()) {
        if (option.serve) add_table_option(*sub, option, words, parsed);
      }
    }
    add_arguments(*sub, spec.action, words, parsed);
  }

  // A repeated option takes its last value, as the launch options do.
  auto last_wins = [](CLI::App& each) {
    for (CLI::Option* option : each.get_options()) {
      if (!option->get_positional()) option->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    }
  };
  last_wins(app);
  for (CLI::App* sub : app.get_subcommands({})) {
    last_wins(*sub);
    sub->fallthrough();
    sub->allow_extras();
    if (sub->get_name() != "serve") sub->footer(std::string(k_client_footer));
  }
  app.footer(footer());
}

// ---- did you mean ------------------------------------------------------------

// The candidate closest to typed, if it is close enough to be a typo.
std::string closest(std::string_view typed, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, typed.size() / 3) + 1;
  for (const std::string& candidate : candidates) {
    std::size_t distance = strings::edit_distance(typed, candidate);
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

std::vector<std::string> action_names() {
  return std::vector<std::string>(store_action_names().begin(), store_action_names().end());
}

std::string subcommand_names() { return strings::join(action_names(), ", "); }

std::vector<std::string> option_spellings(const CLI::App& app) {
  std::vector<std::string> spellings;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames()) spellings.push_back("--" + name);
  }
  return spellings;
}

// ---- values ------------------------------------------------------------------

Expected<int> parse_port(const std::string& text, const std::string& what, int lowest) {
  std::optional<std::int64_t> port = strings::parse_int(strings::trim(text));
  if (!port || *port < lowest || *port > 65535) {
    return fail_usage(what + ": '" + text + "' is not a port number (" + std::to_string(lowest) +
                      "..65535)");
  }
  return static_cast<int>(*port);
}

Expected<std::chrono::milliseconds> parse_timeout(const std::string& text) {
  std::optional<double> seconds = strings::parse_double(strings::trim(text));
  if (!seconds || !std::isfinite(*seconds) || *seconds <= 0 ||
      *seconds > k_longest_timeout_seconds) {
    return fail_usage("--timeout: '" + text + "' is not a number of seconds greater than 0");
  }
  auto ms = static_cast<std::int64_t>(std::ceil(*seconds * 1000.0));
  return std::chrono::milliseconds(std::max<std::int64_t>(ms, 1));
}

// least: 0 where 0 means "no limit", else 1.
Expected<std::size_t> parse_limit(const CLI::Option& option, const std::string& text,
                                  std::int64_t least) {
  std::optional<std::int64_t> number = strings::parse_int(strings::trim(text));
  if (!number || *number < least) {
    return fail_usage(option.get_name() + ": '" + text + "' is not a whole number " +
                      (least > 0 ? "greater than 0" : "(0 for no limit)"));
  }
  return static_cast<std::size_t>(*number);
}

// ---- assembling the command --------------------------------------------------

// Words CLI11 could not place. set and add take one as their value even when
// it starts with '-' ("add n -1"); anything else is an error.
Expected<void> take_leftovers(const CLI::App& app, const CLI::App& sub, StoreAction action,
                              Words& words, const Parsed& parsed) {
  // CLI11 keeps a "--" it met while positionals were still open; it has done its job.
  std::vector<std::string> leftovers;
  for (std::string& word : app.remaining(true)) {
    if (word != "--") leftovers.push_back(std::move(word));
  }
  if (leftovers.empty()) return {};
  const std::string& word = leftovers.front();
  CLI::Option* slot = action == StoreAction::set   ? parsed.value
                      : action == StoreAction::add ? parsed.delta
                                                   : nullptr;
  bool looks_like_option = word.starts_with("--");
  if (leftovers.size() == 1 && slot != nullptr && slot->count() == 0 && !looks_like_option) {
    (action == StoreAction::set ? words.value : words.delta) = word;
    words.took_leftover = true;
    return {};
  }
  std::string where = "store " + sub.get_name();
  if (word.size() > 1 && word.front() == '-') {
    std::string spelling = word.substr(0, word.find('='));
    std::vector<std::string> known = option_spellings(app);
    std::vector<std::string> own = option_spellings(sub);
    known.insert(known.end(), own.begin(), own.end());
    if (std::find(known.begin(), known.end(), spelling) != known.end()) {
      return fail_usage(where + ": unexpected argument '" + word +
                        "' (after --, every word is an argument; put options before --)");
    }
    std::string message = where + ": unknown option '" + spelling + "'";
    if (std::string close = closest(spelling, known); !close.empty()) {
      message += "; did you mean " + close + "?";
    }
    if (slot != nullptr) message += " (write -- before a value that starts with '-')";
    return fail_usage(message + " (see gangrun " + where + " --help)");
  }
  return fail_usage(where + ": unexpected argument '" + word + "' (see gangrun " + where +
                    " --help)");
}

tl::unexpected<Error> no_subcommand(const CLI::App& app) {
  for (const std::string& word : app.remaining(true)) {
    if (word.starts_with("-")) continue;
    std::string message = "store: unknown command '" + word + "'";
    if (std::string close = closest(word, action_names()); !close.empty()) {
      message += "; did you mean " + close + "?";
    }
    return fail_usage(message + " (commands: " + subcommand_names() + ")");
  }
  for (const std::string& word : app.remaining(true)) {
    std::string spelling = word.substr(0, word.find('='));
    std::string message = "store: unknown option '" + spelling + "'";
    if (std::string close = closest(spelling, option_spellings(app)); !close.empty()) {
      message += "; did you mean " + close + "?";
    }
    return fail_usage(message);
  }
  return fail_usage("store: missing command, one of " + subcommand_names() +
                    " (see gangrun store --help)");
}

Expected<StoreServeOptions> serve_options(const Words& words, const Parsed& parsed) {
  for (const StoreOptionWord& spec : store_option_words()) {
    const CLI::Option& option = *parsed.options.at(spec.name);
    if (!spec.serve && option.count() > 0) {
      return fail_usage("store serve: " + option.get_name() +
                        " is for the client commands; serve takes --host and --port");
    }
  }
  StoreServeOptions serve;
  serve.host = std::string(strings::trim(words.options.at("host")));
  if (serve.host.size() > 2 && serve.host.front() == '[' && serve.host.back() == ']') {
    serve.host = serve.host.substr(1, serve.host.size() - 2);
  }
  if (serve.host.empty()) return fail_usage("--host: empty; give an address or a host name");
  GANGRUN_TRY_ASSIGN(port, parse_port(words.options.at("port"), "--port", 0));
  serve.port = *port;
  serve.port_file = words.options.at("port-file");
  struct LimitOption {
    std::string_view name;
    std::optional<std::size_t>* field;
    std::int64_t least;
  };
  const std::array<LimitOption, 7> limits = {{
      {"max-key-bytes", &serve.max_key_bytes, 1},
      {"max-value-bytes", &serve.max_value_bytes, 1},
      {"max-keys-per-request", &serve.max_keys_per_request, 1},
      {"max-store-bytes", &serve.max_store_bytes, 1},
      {"max-connections", &serve.max_connections, 1},
      {"max-connections-per-address", &serve.max_connections_per_address, 0},
      {"max-store-bytes-per-address", &serve.max_store_bytes_per_address, 0},
  }};
  for (const auto& [name, field, least] : limits) {
    const CLI::Option& option = *parsed.options.at(name);
    if (option.count() == 0) continue;
    GANGRUN_TRY_ASSIGN(limit, parse_limit(option, words.options.at(name), least));
    *field = *limit;
  }
  return serve;
}

Expected<HostPort> default_endpoint(const EnvMap& env) {
  if (std::optional<std::string> text = env_lookup(env, "GANGRUN_STORE_ENDPOINT")) {
    return parse_endpoint(*text, "GANGRUN_STORE_ENDPOINT");
  }
  HostPort endpoint{"127.0.0.1", store::k_default_port};
  if (std::optional<std::string> addr = env_lookup(env, "MASTER_ADDR");
      addr && !strings::trim(*addr).empty()) {
    endpoint.host = std::string(strings::trim(*addr));
  }
  if (std::optional<std::string> port = env_lookup(env, "MASTER_PORT")) {
    GANGRUN_TRY_ASSIGN(number, parse_port(*port, "MASTER_PORT", 1));
    endpoint.port = *number;
  }
  return endpoint;
}

Expected<StoreClientOptions> client_options(const Words& words, const Parsed& parsed,
                                            const EnvMap& env) {
  StoreClientOptions client;
  GANGRUN_TRY_ASSIGN(endpoint, parsed.options.at("endpoint")->count() > 0
                                   ? parse_endpoint(words.options.at("endpoint"), "--endpoint")
                                   : default_endpoint(env));
  client.host = endpoint->host;
  client.port = endpoint->port;
  GANGRUN_TRY_ASSIGN(timeout, parse_timeout(words.options.at("timeout")));
  client.timeout = *timeout;
  const std::string& dialect_text = words.options.at("dialect");
  std::string dialect = strings::to_lower(strings::trim(dialect_text));
  if (dialect == "validated") {
    client.dialect = StoreDialect::validated;
  } else if (dialect == "legacy") {
    client.dialect = StoreDialect::legacy;
  } else {
    return fail_usage("--dialect: '" + dialect_text + "' is neither validated nor legacy");
  }
  client.raw_keys = words.flags.at("raw-keys");
  return client;
}

Expected<std::int64_t> parse_delta(const std::string& text) {
  std::optional<std::int64_t> delta = strings::parse_int(strings::trim(text));
  if (!delta) return fail_usage("store add: DELTA '" + text + "' is not a whole number");
  return *delta;
}

}  // namespace

Expected<HostPort> parse_endpoint(const std::string& text, const std::string& what) {
  std::string_view rest = strings::trim(text);
  HostPort endpoint{"", store::k_default_port};
  std::string_view port_text;
  bool has_port = false;
  if (rest.starts_with("[")) {
    std::size_t close = rest.find(']');
    if (close == std::string_view::npos || close == 1) {
      return fail_usage(what + ": '" + text + "' is not HOST:PORT or [IPV6]:PORT");
    }
    endpoint.host = std::string(rest.substr(1, close - 1));
    std::string_view after = rest.substr(close + 1);
    if (!after.empty()) {
      if (!after.starts_with(":")) {
        return fail_usage(what + ": '" + text + "' is not HOST:PORT or [IPV6]:PORT");
      }
      port_text = after.substr(1);
      has_port = true;
    }
  } else {
    std::size_t colon = rest.find(':');
    if (colon != std::string_view::npos && rest.find(':', colon + 1) != std::string_view::npos) {
      return fail_usage(what + ": '" + text +
                        "': write an IPv6 address in brackets, as [ADDR]:PORT");
    }
    endpoint.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = rest.substr(colon + 1);
      has_port = true;
    }
  }
  if (endpoint.host.empty()) return fail_usage(what + ": '" + text + "' has no host (HOST:PORT)");
  if (has_port) {
    GANGRUN_TRY_ASSIGN(port, parse_port(std::string(port_text), what, 1));
    endpoint.port = *port;
  }
  return endpoint;
}

Expected<StoreCommand> parse_store_command(const std::vector<std::string>& args,
                                           const EnvMap& env) {
  CLI::App app(std::string(k_description), "gangrun store");
  Words words;
  Parsed parsed;
  build_app(app, words, parsed);
  StoreCommand command;
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 pops from the back
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    command.help_text = app.help();
    return command;
  } catch (const CLI::ParseError& error) {
    std::vector<CLI::App*> chosen = app.get_subcommands();
    std::string where = chosen.empty() ? "store" : "store " + chosen.front()->get_name();
    return fail_usage(where + ": " + error.what() + " (see gangrun " + where + " --help)");
  }

  std::vector<CLI::App*> chosen = app.get_subcommands();
  if (chosen.empty()) return no_subcommand(app);
  const CLI::App& sub = *chosen.front();
  for (const StoreActionSpec& known : store_action_table()) {
    if (known.name == sub.get_name()) command.action = known.action;
  }
  GANGRUN_TRY(take_leftovers(app, sub, command.action, words, parsed));

  if (command.action == StoreAction::serve) {
    GANGRUN_TRY_ASSIGN(serve, serve_options(words, parsed));
    command.serve = std::move(*serve);
    return command;
  }
  GANGRUN_TRY_ASSIGN(client, client_options(words, parsed, env));
  command.client = std::move(*client);
  if (command.action == StoreAction::keys && command.client.dialect == StoreDialect::legacy) {
    return fail_usage(
        "store keys: needs --dialect validated (PyTorch 1.13's store cannot list its keys)");
  }
  if (command.action == StoreAction::wait || command.action == StoreAction::check) {
    command.keys = words.keys;
  } else if (command.action != StoreAction::keys && command.action != StoreAction::num_keys) {
    command.keys = {words.key};
  }
  if (command.action == StoreAction::set && (parsed.value->count() > 0 || words.took_leftover)) {
    command.value = words.value;
  }
  if (command.action == StoreAction::add && (parsed.delta->count() > 0 || words.took_leftover)) {
    GANGRUN_TRY_ASSIGN(delta, parse_delta(words.delta));
    command.delta = *delta;
  }
  return command;
}

}  // namespace gangrun::config
