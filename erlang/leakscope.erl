%% leakscope - the leakscope agent's view of this VM, from its shell.
%%
%% The VM must run under the agent (`leakscope run -- erl ...`, or
%% LD_PRELOAD=.../libleakscope.so); otherwise every call returns
%% {error, no_agent}.  The NIF (leakscope_nif.so) sits beside this
%% module's .beam or in the application's priv directory, and asks the
%% agent of its own process over the agent's control socket; every call
%% runs on a dirty I/O scheduler.  See docs/ERLANG.md.
-module(leakscope).

-export([olds/1, olds/2, stats/0, reset/0, report/1, growing/0, formats/0]).
-on_load(init/0).

-type frame() :: {Module :: binary() | undefined,
                  Function :: binary() | undefined,
                  File :: binary() | undefined,
                  Line :: pos_integer() | undefined}.
-type old() :: {AgeSeconds :: non_neg_integer(), Size :: non_neg_integer(),
                Addr :: non_neg_integer(), SymbolizeNs :: non_neg_integer(),
                Stack :: [frame()]}.
-type error() :: {error, no_agent | no_control | enomem |
                  {agent | report | render, binary()}}.
-export_type([frame/0, old/0, error/0]).

init() ->
    erlang:load_nif(nif_path(), 0).

%% The application's priv dir when installed as an OTP application,
%% else the directory of this module's own .beam.
nif_path() ->
    Beside = filename:join(filename:dirname(code:which(?MODULE)),
                           "leakscope_nif"),
    case code:priv_dir(leakscope) of
        {error, _} -> Beside;
        Priv ->
            InPriv = filename:join(Priv, "leakscope_nif"),
            case filelib:is_regular(InPriv ++ ".so") of
                true -> InPriv;
                false -> Beside
            end
    end.

%% @doc The N oldest live blocks, oldest first, C++ names as the symbol
%% table has them.
-spec olds(non_neg_integer()) -> [old()] | error().
olds(_N) -> erlang:nif_error(nif_not_loaded).

%% @doc The same, C++ and Rust names demangled when Demangle is true.
-spec olds(non_neg_integer(), boolean()) -> [old()] | error().
olds(_N, _Demangle) -> erlang:nif_error(nif_not_loaded).

%% @doc Call counts per function, live and total figures, allocator figures.
-spec stats() -> map() | error().
stats() -> erlang:nif_error(nif_not_loaded).

%% @doc Forget every live block seen so far; later calls show newer ones.
-spec reset() -> ok | error().
reset() -> erlang:nif_error(nif_not_loaded).

%% @doc The report as a binary.  Opts, a map or a proplist: format (one of
%% formats()), top, min_age (ms), min_size, max_size, show_allocs, growing,
%% depth (frames shown), full_names, hide_runtime.
-spec report(map() | [{atom(), term()}]) -> binary() | error().
report(_Opts) -> erlang:nif_error(nif_not_loaded).

%% @doc The sites growing linearly or exponentially, fastest first.
-spec growing() -> [map()] | error().
growing() -> erlang:nif_error(nif_not_loaded).

%% @doc The report formats this build offers.
-spec formats() -> [atom()].
formats() -> erlang:nif_error(nif_not_loaded).
