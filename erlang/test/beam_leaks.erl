%% beam_leaks - a node that leaks in every way the BEAM can, beside a
%% steady part that must stay quiet: the ground truth of `leakscope beam`
%% in tests/integration/t_erlang.py.
%%
%% start(TickMs) starts, each leak growing by a fixed amount every tick:
%%   process leak   bl_spawner starts 5 processes in leaked_worker/0 that
%%                  wait forever
%%   mailbox        bl_mailbox gets 20 messages it never receives
%%   ETS            table bl_leaky_tab gets 50 rows of ~100 bytes
%%   binaries       bl_binholder keeps 16 more refc binaries of 4 KiB
%%   monitors       bl_monitor monitors bl_target 20 more times
%%   atoms          bl_atoms makes 20 new atoms (bl_atom_N)
%%   ETS tables     bl_tables creates 2 tables bl_leaked_tab, never deleted
%%   ports          bl_ports opens a TCP listen socket on 127.0.0.1
%%   gen_servers    bl_sessions starts 2 gen_servers of this module
%%                  (initial call beam_leaks:init/1) that never stop
%%   native         with native => true, 2 MiB more from leaky_nif, in
%%                  blocks of 256 KiB (mmapped by malloc: fresh pages, so
%%                  the RSS grows by as much)
%% and the steady part, as busy but flat:
%%   bl_steady      a server that handles 50 messages a tick (mailbox ~0)
%%   bl_steady_tab  50 rows rewritten every tick (same keys)
%%   bl_churn       starts 5 short-lived processes a tick that exit
%%   bl_bins_steady keeps 16 refc binaries, replaced every tick
%% and, for --gc-check, bl_bins_lazy: it too keeps only its newest 16
%% binaries, but its heap is so large that it never collects during a
%% test (neither its heap nor its binary virtual heap fills), so the
%% binaries it dropped stay referenced: its binary memory grows until a
%% forced collection frees all but 16 of them (recon's bin_leak case).
-module(beam_leaks).
-export([start/1, start/2, leaked_worker/0, churn_worker/0]).
-export([init/1, handle_call/3, handle_cast/2]).
-behaviour(gen_server).

start(TickMs) -> start(TickMs, #{}).

start(TickMs, Opts) ->
    Target = spawn(fun() -> park() end),
    register(bl_target, Target),
    reg(bl_mailbox, fun() -> park() end),
    reg(bl_steady, fun() -> steady_server() end),
    reg(bl_spawner, every(TickMs, fun(_) -> spawn_leaked(5) end)),
    reg(bl_feeder, every(TickMs, fun(_) -> feed(20, 50) end)),
    reg(bl_ets, every(TickMs, fun(N) -> ets_tick(N) end)),
    %% the tables belong to bl_ets: they live as long as it does
    reg(bl_binholder, holder(TickMs, [], grow)),
    reg(bl_bins_steady, holder(TickMs, [], replace)),
    register(bl_bins_lazy, spawn_opt(holder(TickMs, [], replace),
                                     [{min_heap_size, 1000000},
                                      {min_bin_vheap_size, 100000000}])),
    reg(bl_monitor, every(TickMs, fun(_) -> monitor_more(20) end)),
    reg(bl_atoms, every(TickMs, fun(N) -> atoms(N, 20) end)),
    reg(bl_churn, every(TickMs, fun(_) -> churn(5) end)),
    reg(bl_tables, every(TickMs, fun(_) -> new_tables(2) end)),
    reg(bl_ports, every(TickMs, fun(_) -> listen() end)),
    reg(bl_sessions, every(TickMs, fun(_) -> sessions(2) end)),
    case maps:get(native, Opts, false) of
        true -> reg(bl_native, every(TickMs, fun(_) -> native() end));
        false -> ok
    end,
    ok.

reg(Name, Fun) ->
    Pid = spawn(Fun),
    register(Name, Pid).

park() ->
    receive stop -> ok end.

%% A process that runs Fun(N) every TickMs, N = 0, 1, 2, ...
every(TickMs, Fun) ->
    fun() -> loop(TickMs, Fun, 0) end.

loop(TickMs, Fun, N) ->
    Fun(N),
    receive stop -> ok after TickMs -> loop(TickMs, Fun, N + 1) end.

leaked_worker() ->
    receive stop -> ok end.

churn_worker() ->
    receive after 5 -> ok end.

spawn_leaked(0) -> ok;
spawn_leaked(K) -> spawn(?MODULE, leaked_worker, []), spawn_leaked(K - 1).

churn(0) -> ok;
churn(K) -> spawn(?MODULE, churn_worker, []), churn(K - 1).

feed(Leaky, Steady) ->
    [bl_mailbox ! {leak, I} || I <- lists:seq(1, Leaky)],
    [bl_steady ! {work, I} || I <- lists:seq(1, Steady)],
    ok.

steady_server() ->
    receive {work, _} -> steady_server(); stop -> ok end.

ets_tick(0) ->
    ets:new(bl_leaky_tab, [named_table, public, set]),
    ets:new(bl_steady_tab, [named_table, public, set]),
    ets_tick(1);
ets_tick(N) ->
    Pad = binary:copy(<<"x">>, 60),
    [ets:insert(bl_leaky_tab, {{N, I}, Pad}) || I <- lists:seq(1, 50)],
    [ets:insert(bl_steady_tab, {I, N, Pad}) || I <- lists:seq(1, 50)],
    ok.

%% Binaries of 4 KiB live outside the heap (refc); grow keeps them all,
%% replace keeps only the newest 16.
holder(TickMs, Held, Mode) ->
    fun() -> hold(TickMs, Held, Mode) end.

hold(TickMs, Held, Mode) ->
    New = [binary:copy(<<I:32>>, 1024) || I <- lists:seq(1, 16)],
    Now = case Mode of grow -> New ++ Held; replace -> New end,
    receive stop -> ok after TickMs -> hold(TickMs, Now, Mode) end.

monitor_more(0) -> ok;
monitor_more(K) -> erlang:monitor(process, whereis(bl_target)), monitor_more(K - 1).

atoms(N, K) ->
    _ = [list_to_atom("bl_atom_" ++ integer_to_list(N * K + I)) || I <- lists:seq(1, K)],
    ok.

new_tables(0) -> ok;
new_tables(K) -> ets:new(bl_leaked_tab, [set]), new_tables(K - 1).

listen() ->
    {ok, _} = gen_tcp:listen(0, [{ip, {127, 0, 0, 1}}]),
    ok.

sessions(0) -> ok;
sessions(K) -> {ok, _} = gen_server:start(?MODULE, session, []), sessions(K - 1).

init(session) -> {ok, #{}}.
handle_call(_, _, S) -> {reply, ok, S}.
handle_cast(_, S) -> {noreply, S}.

native() ->
    leaky_nif:leak_times(8, 262144).
