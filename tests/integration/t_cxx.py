"""C++: operator new and containers, names demangled (ground truth:
cxx-leaks.cc)."""

from harness import (check, once, workload, leakscope, root_report,
                     expect_status, expect_site, expect_no_temporaries,
                     the_site, outer_functions, module_base, site_text,
                     sites_mentioning, eq, ok)

NEW = "operator new(unsigned long)"


@once
def run():
    r = leakscope(["--format", "json"], [workload("cxx-leaks")])
    expect_status(r, 0, "cxx-leaks exit status")
    return r, root_report(r)


def exe():
    return workload("cxx-leaks")


def cxx_site(name, nbytes, nblocks):
    def t():
        _, rep = run()
        site = expect_site(rep, name, exe(), nbytes, nblocks)
        fr = site["frames"][0]
        ok(fr.get("function") == NEW and
           (module_base(fr) or "").startswith("libstdc++"),
           "%s frames[0]: %s in libstdc++" % (name, NEW), site_text(site))
    return t


check("leaktest::Widget::make(): 96 bytes in 2 blocks, frames[0] operator new(unsigned long)")(
    cxx_site("leaktest::Widget::make()", 96, 2))
check("leaked std::vector<int>(100) buffer: 400 bytes, first program frame site_vector()")(
    cxx_site("site_vector()", 400, 1))
check("leaked 40-char std::string buffer: 41 bytes, first program frame site_string()")(
    cxx_site("site_string()", 41, 1))
check("new int[50]: 200 bytes, frames[0] operator new(unsigned long)")(
    cxx_site("site_array()", 200, 1))


@check("new int[50]: operator new[] tail-calls operator new, so frames[1] is site_array()")
def t_array_frames():
    _, rep = run()
    site = the_site(rep, "site_array()", exe())
    eq([f.get("function") for f in site["frames"][:3]],
       [NEW, "site_array()", "cxx_stage()"], "first three frames")


@check("stacks continue through cxx_stage() to main")
def t_stacks():
    _, rep = run()
    site = the_site(rep, "leaktest::Widget::make()", exe())
    eq(outer_functions(site, exe())[:3],
       ["leaktest::Widget::make()", "cxx_stage()", "main"],
       "program frames of Widget::make")


@check("no mangled name (_Z...) in any frame")
def t_no_mangled():
    _, rep = run()
    bad = sites_mentioning(rep, lambda f: f.startswith("_Z"))
    ok(not bad, "sites with mangled names", "\n".join(site_text(s) for s in bad[:3]))


@check("deleted objects, dead containers and a caught exception leave no site")
def t_temps():
    _, rep = run()
    expect_no_temporaries(rep)
