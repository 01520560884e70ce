# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The report's files on the controller: the report as JSON text (report_json, and triage_html_json for the HTML page,
escaped for a script element; plain, Ansible's lazy containers as plain JSON types) and the files written atomically
in a directory made safe to write in (write_file, write_pair, output_directory, check_directory).
"""

from __future__ import annotations

import binascii
import json
import os
import stat
import tempfile

from ansible.errors import AnsibleFilterError

ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_ESCAPE_TABLE = str.maketrans(ESCAPES)


def _plain(value):
    """Ansible's lazy containers and tagged strings as plain JSON types."""
    if isinstance(value, dict):
        return dict((str(k), _plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return str(value)


def plain(value):
    """Public name of the conversion to plain JSON types (the history and the metrics use it)."""
    return _plain(value)


def triage_html_json(data):
    try:
        text = json.dumps(_plain(data), sort_keys=True, ensure_ascii=False, allow_nan=False)
    except ValueError as exc:
        raise AnsibleFilterError("triage_html_json: the data cannot be written as JSON: %s" % exc)
    return text.translate(_ESCAPE_TABLE)


def report_json(data):
    """The report as the text of triage-report.json: plain JSON, keys sorted, compact (no indentation: at 200
    nodes indenting made 4.5 MB of 1.9; ``jq .`` shows it indented)."""
    try:
        return json.dumps(_plain(data), sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                          allow_nan=False) + "\n"
    except ValueError as exc:
        raise AnsibleFilterError("the report cannot be written as JSON: %s" % exc)


def write_file(path, text, mode=0o644):
    """Write ``text`` to ``path`` atomically: a new file in the same directory, then renamed over
    ``path``. A symlink at ``path`` is replaced, never followed; anything else that is not a regular
    file (a directory, a fifo) is refused. Returns whether the content changed."""
    directory = os.path.dirname(path) or "."
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise AnsibleFilterError("cannot write %s: %s" % (path, exc.strerror))
    if st is not None and not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        raise AnsibleFilterError("cannot write %s: it exists and is not a regular file; remove it or give another "
                                 "report_output_dir" % path)
    data = text.encode("utf-8")
    if st is not None and stat.S_ISREG(st.st_mode):
        try:
            with open(path, "rb") as handle:
                if handle.read(len(data) + 1) == data:
                    return False
        except OSError:
            pass
    if not os.path.isdir(directory):
        raise AnsibleFilterError("cannot write %s: the directory %s does not exist; create it or give another "
                                 "report_output_dir" % (path, directory))
    try:
        fd, temp = tempfile.mkstemp(dir=directory, prefix=".%s." % os.path.basename(path))
    except OSError as exc:
        raise AnsibleFilterError("cannot write in %s: %s; give a report_output_dir you can write to" % (directory, exc.strerror))
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            os.fchmod(handle.fileno(), mode)
        os.replace(temp, path)
    except OSError as exc:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise AnsibleFilterError("cannot write %s: %s" % (path, exc.strerror))
    return True


def check_output_dir_given(path):
    """Refuse an empty report_output_dir (AnsibleFilterError): it names no directory, and its default, the
    controller's $PWD, is empty when the environment has no PWD."""
    if not isinstance(path, str) or not path.strip():
        raise AnsibleFilterError(
            "report_output_dir is empty, so the report has nowhere to go (its default is the controller's $PWD, "
            "which this run's environment does not set): give the directory for triage-report.json and "
            "triage-report.html, for example -e report_output_dir=/var/tmp/k8snet-reports")
    return path


def output_directory(path):
    """The report directory, made safe to write in: created when missing (each new component 0700),
    refused when another user (not root) could swap what it holds - a symlink of theirs, or a
    directory of theirs that others may write.  A directory anyone may write without the sticky bit
    is refused whoever owns it; an empty path is refused (``check_output_dir_given``).  Returns its
    real path."""
    given = os.path.abspath(os.path.expanduser(check_output_dir_given(path)))
    me = os.geteuid()
    missing = []
    probe = given
    while True:
        try:
            os.lstat(probe)
            break
        except FileNotFoundError:
            missing.append(probe)
            parent = os.path.dirname(probe)
            if parent == probe:
                break
            probe = parent
        except OSError as exc:
            raise AnsibleFilterError("report_output_dir %s cannot be read: %s" % (path, exc.strerror))
    for new in reversed(missing):
        _check_directory(os.path.dirname(new), path, me)
        try:
            os.mkdir(new, 0o700)
        except FileExistsError:
            # made meanwhile: by this user, it is checked below like any existing one; by another, planted
            st = os.lstat(new)
            if st.st_uid != me:
                raise AnsibleFilterError("report_output_dir %s is refused: %s appeared while it was being created, owned by "
                                         "uid %d, another user; give a directory of your own" % (path, new, st.st_uid))
        except OSError as exc:
            raise AnsibleFilterError("report_output_dir %s cannot be created (%s: %s); create it or give another"
                                     % (path, new, exc.strerror))
    return _check_directory(given, path, me)


def _check_directory(directory, given, me):
    try:
        st = os.lstat(directory)
    except OSError as exc:
        raise AnsibleFilterError("report_output_dir %s cannot be read: %s" % (given, exc.strerror))
    if stat.S_ISLNK(st.st_mode):
        if st.st_uid not in (me, 0):
            raise AnsibleFilterError(
                "report_output_dir %s is refused: %s is a symlink owned by uid %d, another user, who could point it "
                "anywhere; remove it or give a directory of your own" % (given, directory, st.st_uid))
        directory = os.path.realpath(directory)
        try:
            st = os.stat(directory)
        except OSError as exc:
            raise AnsibleFilterError("report_output_dir %s: its symlink leads nowhere usable (%s)" % (given, exc.strerror))
    if not stat.S_ISDIR(st.st_mode):
        raise AnsibleFilterError("report_output_dir %s is not a directory (%s); give a directory" % (given, directory))
    writable_by_others = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if st.st_uid not in (me, 0) and writable_by_others:
        raise AnsibleFilterError(
            "report_output_dir %s is refused: %s belongs to uid %d, another user, and others may write in it (mode %04o), "
            "so the report could be swapped; give a directory of your own" % (given, directory, st.st_uid,
                                                                              stat.S_IMODE(st.st_mode)))
    if st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
        raise AnsibleFilterError(
            "report_output_dir %s is refused: anyone may write in %s and it has no sticky bit (mode %04o), so any user "
            "could replace the report; give a directory of your own (chmod o-w)"
            % (given, directory, stat.S_IMODE(st.st_mode)))
    return directory


def check_directory(directory, given):
    """Refuse ``directory`` when another user could swap what it holds (as for report_output_dir);
    returns its real path.  ``given``: the name the user gave, for the message."""
    return _check_directory(directory, given, os.geteuid())


def _unlink(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def _temp_with(directory, name, data, mode):
    """A new temporary file in ``directory`` holding ``data``, flushed to the disk; removed on failure."""
    fd, temp = tempfile.mkstemp(dir=directory, prefix=".%s." % name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
    except BaseException:
        _unlink(temp)
        raise
    return temp


def _current(path, data):
    """Whether ``path`` is a regular file holding exactly ``data``; refuses a directory or special file there."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        raise AnsibleFilterError("cannot write %s: it exists and is not a regular file; remove it or give another "
                                 "report_output_dir" % path)
    if stat.S_ISLNK(st.st_mode):
        return False
    try:
        with open(path, "rb") as handle:
            return handle.read(len(data) + 1) == data
    except OSError:
        return False


def write_pair(directory, texts, mode=0o644):
    """Replace the files ``texts`` ({name: text}, e.g. the JSON and the HTML report) in ``directory``
    together or not at all: each written to a temporary file in the same directory and flushed to the
    disk, then renamed over its name; if a rename fails, the names already renamed get their old file
    back (kept by a hard link until the end).  A full disk, a read-only directory or any other failure
    leaves the old files as they were.  A symlink in place of a file is replaced, never followed.
    Returns whether any content changed."""
    names = list(texts)
    datas = dict((name, texts[name].encode("utf-8")) for name in names)
    paths = dict((name, os.path.join(directory, name)) for name in names)
    if all(_current(paths[name], datas[name]) for name in names):
        return False
    temps, backups, renamed = {}, {}, []
    try:
        try:
            for name in names:
                temps[name] = _temp_with(directory, name, datas[name], mode)
            for name in names:
                if os.path.lexists(paths[name]):
                    # a name no one can guess and plant beforehand in a shared directory
                    backup = os.path.join(directory, ".%s.old.%s" % (name, binascii.hexlify(os.urandom(8)).decode()))
                    os.link(paths[name], backup, follow_symlinks=False)
                    backups[name] = backup
            for name in names:
                os.replace(temps[name], paths[name])
                del temps[name]
                renamed.append(name)
        except OSError as exc:
            for name in reversed(renamed):  # put the old file back under each name already replaced
                if name in backups:
                    os.replace(backups.pop(name), paths[name])
                else:
                    _unlink(paths[name])
            raise AnsibleFilterError("cannot write the report in %s: %s (%s); the previous %s are left as they were"
                                     % (directory, exc.strerror or exc, getattr(exc, "filename", "") or directory,
                                        " and ".join(names)))
    finally:
        for temp in list(temps.values()) + list(backups.values()):
            _unlink(temp)
    try:
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dir_fd)  # the renames themselves on the disk
        finally:
            os.close(dir_fd)
    except OSError:
        pass
    return True
