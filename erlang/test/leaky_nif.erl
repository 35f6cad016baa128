%% leaky_nif - loads leaky_nif.so (beside this .beam): leak(Bytes) leaves
%% one native block of Bytes bytes behind per call (leaky_nif.c).
-module(leaky_nif).
-export([leak/1, leak_times/2]).
-on_load(init/0).

init() ->
    erlang:load_nif(filename:join(filename:dirname(code:which(?MODULE)),
                                  "leaky_nif"), 0).

leak(_Bytes) -> erlang:nif_error(nif_not_loaded).

%% N calls of leak(Bytes): exactly N blocks, N * Bytes bytes.
leak_times(0, _Bytes) -> ok;
leak_times(N, Bytes) -> ok = leak(Bytes), leak_times(N - 1, Bytes).
