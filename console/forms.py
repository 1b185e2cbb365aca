from django import forms

from console.templatetags.console_tags import source_label
from memoryapp.models import Job, Memory, SourceKind
from memoryapp.timebounds import utc_offset_problem


class TimeFilterField(forms.DateTimeField):
    """A time typed or pasted with an offset keeps it: held to the API's rule for offsets, so one
    PostgreSQL cannot store is a form error and not a 500."""

    def to_python(self, value):
        parsed = super().to_python(value)
        if parsed is not None and (problem := utc_offset_problem(parsed)):
            raise forms.ValidationError(problem, code="invalid")
        return parsed


class MemoryFilterForm(forms.Form):
    q = forms.CharField(required=False, max_length=200, label="Search")
    memory_type = forms.ChoiceField(required=False, choices=[("", "Any type"), *Memory.Type.choices], label="Type")
    namespace = forms.CharField(required=False, max_length=300)
    # Quarantined input is never in the person's list, so it is not a status to filter on.
    status = forms.ChoiceField(required=False, choices=[("", "Any status"), *[
        c for c in Memory.Status.choices if c[0] != Memory.Status.QUARANTINED]])
    # Named as the table names them (source_label), so a filter reads like the column it filters.
    source_kind = forms.ChoiceField(required=False, choices=[("", "Any source"),
                                                             *((k, source_label(k)) for k in SourceKind.values)],
                                    label="Source")


class CorrectionForm(forms.Form):
    statement = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), max_length=4000, strip=True)


class EraseForm(forms.Form):
    confirm = forms.CharField(max_length=200, label="Type erase to confirm")

    def __init__(self, *args, subject_ref: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.subject_ref = subject_ref

    def clean_confirm(self):
        value = self.cleaned_data["confirm"].strip()
        if value.lower() != "erase" and value != self.subject_ref:
            raise forms.ValidationError('Type the word "erase" (or your id) to confirm.')
        return value


class AuditFilterForm(forms.Form):
    actor = forms.CharField(required=False, max_length=200)
    action = forms.CharField(required=False, max_length=50)
    subject = forms.CharField(required=False, max_length=200)
    since = TimeFilterField(required=False, widget=forms.DateTimeInput(attrs={"type": "datetime-local"}))
    until = TimeFilterField(required=False, widget=forms.DateTimeInput(attrs={"type": "datetime-local"}))

    def clean(self):
        data = super().clean()
        if data.get("since") and data.get("until") and data["since"] >= data["until"]:
            raise forms.ValidationError("“From” must be before “until”: nothing is listed until the range is "
                                        "the right way round.")
        return data


class JobFilterForm(forms.Form):
    status = forms.ChoiceField(required=False, choices=[("", "Any status"), *Job.Status.choices])
    kind = forms.ChoiceField(required=False, choices=[("", "Any kind"), *Job.Kind.choices])
    job = forms.CharField(required=False, max_length=60, label="Job id")


class ApiKeyForm(forms.Form):
    name = forms.CharField(required=False, max_length=200)
    subject_ref = forms.CharField(required=False, max_length=200, label="Bind to subject (optional)")
    max_source = forms.ChoiceField(choices=SourceKind.choices, initial=SourceKind.USER_EXPLICIT, required=False,
                                   label="Highest source it may claim")


class ConflictCorrectionForm(forms.Form):
    statement = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), max_length=4000, strip=True)
