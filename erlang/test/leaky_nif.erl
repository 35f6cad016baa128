%% leaky_nif - loads leaky_nif.so (beside this .beam): leak(Bytes) leaves
%% one native block of Bytes bytes behind per call (leaky_nif.c).
-module(leaky_nif).
-export([leak/1, leak_times/2, chain_times/2, chain_every/2]).
-on_load(init/0).

init() ->
    erlang:load_nif(filename:join(filename:dirname(code:which(?MODULE)),
                                  "leaky_nif"), 0).

leak(_Bytes) -> erlang:nif_error(nif_not_loaded).

%% N calls of leak(Bytes): exactly N blocks, N * Bytes bytes.
leak_times(0, _Bytes) -> ok;
leak_times(N, Bytes) -> ok = leak(Bytes), leak_times(N - 1, Bytes).

%% N calls of leak(Bytes), each under the chain leak_outer/1 ->
%% leak_middle/1 -> leak_inner/1 -> leak/1 (no tail calls: each keeps
%% its frame): the Erlang callers a report names above the NIF.
chain_times(0, _Bytes) -> ok;
chain_times(N, Bytes) -> ok = leak_outer(Bytes), chain_times(N - 1, Bytes).

leak_outer(Bytes) -> ok = leak_middle(Bytes), ok.

leak_middle(Bytes) -> ok = leak_inner(Bytes), ok.

leak_inner(Bytes) -> ok = leak(Bytes), ok.

%% leak_outer(Bytes) every Ms milliseconds, forever; "ready OSPID" on
%% stdout after the first.
chain_every(Ms, Bytes) ->
    ok = leak_outer(Bytes),
    io:format("ready ~s~n", [os:getpid()]),
    chain_loop(Ms, Bytes).

chain_loop(Ms, Bytes) ->
    timer:sleep(Ms),
    ok = leak_outer(Bytes),
    chain_loop(Ms, Bytes).
